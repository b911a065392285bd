import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { describe, test } from 'node:test';
import {
  CATALOGUE,
  type CatalogueDoc,
  catalogueModel,
  checkCatalogue,
  inputIncludesCached,
} from '../../src/domain/prices/catalogue.ts';
import { lookupNames } from '../../src/domain/prices/model-names.ts';

const patternOf = (model: string) => catalogueModel(model)?.pattern ?? null;

describe('price catalogue', () => {
  test('the shipped file is sound, large enough and covers every provider asked for', () => {
    assert.deepEqual(checkCatalogue(CATALOGUE), []);
    assert.ok(CATALOGUE.models.length >= 150, `${CATALOGUE.models.length} models`);
    const providers = new Set(CATALOGUE.models.map((m) => m.provider));
    for (const p of [
      'openai',
      'anthropic',
      'google',
      'mistral',
      'meta',
      'deepseek',
      'xai',
      'cohere',
      'amazon',
    ]) {
      assert.ok(providers.has(p), p);
    }
  });

  test('npm run check:prices passes on the shipped file', () => {
    const out = execFileSync(process.execPath, ['--import', 'tsx', 'src/check-prices.ts'], {
      encoding: 'utf8',
    });
    assert.match(out, /sound/);
  });

  test('the check finds duplicate patterns, bad prices and examples another entry takes', () => {
    const base = CATALOGUE.models.find((m) => m.pattern === 'gpt-4o');
    const mini = CATALOGUE.models.find((m) => m.pattern === 'gpt-4o-mini');
    assert.ok(base && mini);
    const doc: CatalogueDoc = {
      ...CATALOGUE,
      models: [
        base,
        { ...base, source: 'litellm:copy' },
        { ...mini, input: -1, examples: ['gpt-4o-2024-08-06'] },
        { ...mini, pattern: 'Upper', provider: 'nobody', source: 'nowhere', examples: [] },
      ],
    };
    const faults = checkCatalogue(doc).join('\n');
    assert.match(faults, /models\[1\] \(gpt-4o\): duplicate pattern/);
    assert.match(faults, /models\[2\] \(gpt-4o-mini\): input must be a price/);
    assert.match(faults, /example "gpt-4o-2024-08-06" of gpt-4o-mini finds gpt-4o/);
    assert.match(faults, /models\[3\] \(Upper\): pattern must be a non-empty lower-case name/);
    assert.match(faults, /unknown provider nobody/);
    assert.match(faults, /source must start with a source id/);
    assert.match(faults, /needs at least one example/);
  });
});

describe('model name matching', () => {
  test('case and surrounding blanks do not matter', () => {
    assert.equal(patternOf(' GPT-4o '), 'gpt-4o');
    assert.equal(patternOf('Claude-Sonnet-4-5'), 'claude-sonnet-4-5');
  });

  test('provider prefixes are dropped: paths, Bedrock regions and vendors', () => {
    assert.equal(patternOf('openai/gpt-4o'), 'gpt-4o');
    assert.equal(patternOf('azure/openai/gpt-4.1-mini'), 'gpt-4.1-mini');
    assert.equal(patternOf('anthropic.claude-3-5-haiku-20241022-v1:0'), 'claude-3-5-haiku');
    assert.equal(patternOf('us.anthropic.claude-sonnet-4-5-20250929-v1:0'), 'claude-sonnet-4-5');
    assert.equal(patternOf('bedrock/eu.amazon.nova-pro-v1:0'), 'nova-pro');
    assert.equal(patternOf('vertex_ai/claude-opus-4-1@20250805'), 'claude-opus-4-1');
    assert.equal(patternOf('models/gemini-2.5-flash'), 'gemini-2.5-flash');
    assert.equal(patternOf('mistral/mistral-large-2411'), 'mistral-large-2411');
  });

  test('date and version suffixes are dropped', () => {
    assert.equal(patternOf('gpt-4o-2024-08-06'), 'gpt-4o');
    assert.equal(patternOf('claude-haiku-4-5-20251001'), 'claude-haiku-4-5');
    assert.equal(patternOf('gpt-4-0613'), 'gpt-4');
    assert.equal(patternOf('gemini-2.0-flash-001'), 'gemini-2.0-flash');
    assert.equal(patternOf('grok-3-latest'), 'grok-3');
    assert.equal(patternOf('gpt-4.1-2030-01-01'), 'gpt-4.1');
  });

  test('the most specific entry wins', () => {
    // A dated entry priced apart beats its family; a host-qualified entry beats the bare name.
    assert.equal(patternOf('gpt-4o-2024-05-13'), 'gpt-4o-2024-05-13');
    assert.equal(catalogueModel('gpt-4o-2024-05-13')?.input, 5);
    assert.equal(catalogueModel('gpt-4o-2024-08-06')?.input, 2.5);
    assert.equal(
      patternOf('together_ai/meta-llama/Llama-4-Scout-17B-16E-Instruct'),
      'together_ai/meta-llama/llama-4-scout-17b-16e-instruct',
    );
    assert.equal(patternOf('meta-llama/llama-4-scout-17b-16e-instruct'), 'llama-4-scout-17b-16e-instruct');
  });

  test('words are never dropped: a smaller model does not take its family price', () => {
    assert.equal(patternOf('gpt-4o-mini-2024-07-18'), 'gpt-4o-mini');
    assert.equal(patternOf('gpt-4o-realtime-unknown'), null);
    assert.equal(patternOf('my-finetune'), null);
    assert.equal(patternOf(''), null);
    assert.deepEqual(lookupNames('gpt-4o-mini'), ['gpt-4o-mini']);
  });

  test('each provider says whether its input count holds the cached tokens', () => {
    assert.equal(inputIncludesCached(catalogueModel('gpt-4o')!), true);
    assert.equal(inputIncludesCached(catalogueModel('claude-sonnet-4-5')!), false);
    assert.equal(inputIncludesCached(catalogueModel('us.anthropic.claude-sonnet-4-5-20250929-v1:0')!), false);
    assert.equal(inputIncludesCached(catalogueModel('gemini-2.5-pro')!), true);
  });
});
