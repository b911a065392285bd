import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { costOf } from '../../src/domain/prices/cost.ts';
import { type ProjectPrice, Pricer } from '../../src/domain/prices/pricer.ts';

const usage = (
  input: number | null,
  output: number | null,
  cacheRead: number | null = null,
  cacheCreation: number | null = null,
) => ({
  input,
  output,
  cacheRead,
  cacheCreation,
});
const close = (a: number | null, b: number) => {
  assert.ok(a !== null && Math.abs(a - b) < 1e-12, `${a} ≠ ${b}`);
};

describe('the cache-token rule (hand-computed bills)', () => {
  const pricer = new Pricer();

  test('OpenAI style: cached tokens are inside the input count, billed once at the cache price', () => {
    // gpt-4o: $2.50 input, $1.25 cached input, $10 output per million.
    // 10,000 input of which 6,000 cached, 500 output: 4,000 × 2.5 + 6,000 × 1.25 + 500 × 10 = 22,500 µ$.
    close(pricer.costOf('gpt-4o-2024-08-06', 0, usage(10_000, 500, 6_000), null), 0.0225);
  });

  test('Anthropic style: cache reads and writes come on top of the input count', () => {
    // claude-sonnet-4-5: $3 input, $0.30 cache read, $3.75 cache write, $15 output per million.
    // 100 input, 20,000 read, 5,000 written, 400 output: 300 + 6,000 + 18,750 + 6,000 = 31,050 µ$.
    // (Leaving the writes out would show $0.0123; adding reads to an inclusive count would bill them twice.)
    close(pricer.costOf('claude-sonnet-4-5-20250929', 0, usage(100, 400, 20_000, 5_000), null), 0.03105);
  });

  test('a span that says its input includes the cached tokens is billed the same as the exclusive count', () => {
    // The OpenTelemetry convention counts the cache inside gen_ai.usage.input_tokens: 100 + 20,000 + 5,000.
    close(pricer.costOf('claude-sonnet-4-5', 0, usage(25_100, 400, 20_000, 5_000), true), 0.03105);
    // And an OpenAI model said to be exclusive adds its cache reads.
    close(pricer.costOf('gpt-4o', 0, usage(4_000, 500, 6_000), false), 0.0225);
  });

  test('an inclusive count smaller than its cache reads cannot include them: read as exclusive', () => {
    close(pricer.costOf('gpt-4o', 0, usage(100, 0, 6_000), null), (100 * 2.5 + 6_000 * 1.25) / 1e6);
  });

  test('long inputs are billed at the long-context prices, cached tokens counted in the length', () => {
    // gemini-2.5-pro above 200k input tokens: $2.50 input, $0.25 cached, $15 output.
    // 250,000 input (inclusive) of which 50,000 cached, 1,000 output: 500,000 + 12,500 + 15,000 µ$.
    close(pricer.costOf('gemini-2.5-pro', 0, usage(250_000, 1_000, 50_000), null), 0.5275);
    // At 200,000 exactly the base prices apply: 150,000 × 1.25 + 50,000 × 0.125 + 1,000 × 10.
    close(pricer.costOf('gemini-2.5-pro', 0, usage(200_000, 1_000, 50_000), null), 0.20375);
  });

  test('a missing cache price bills those tokens as input; no count at all gives no cost', () => {
    // gpt-4-turbo has no cache prices: 1,000 input (300 of them written to a cache) at $10, 10 output at $30.
    close(pricer.costOf('gpt-4-turbo', 0, usage(1_000, 10, null, 300), null), 0.0103);
    assert.equal(costOf({ input: 1, output: 1 }, usage(null, null), true), null);
    assert.equal(pricer.costOf('gpt-4o', 0, usage(null, null), null), null);
    assert.equal(pricer.costOf('gpt-4o', 0, usage(0, 0), null), 0);
  });

  test('no model or an unknown model: no cost', () => {
    assert.equal(pricer.costOf(null, 0, usage(10, 10), null), null);
    assert.equal(pricer.costOf('my-own-model', 0, usage(10, 10), null), null);
  });
});

describe('project prices', () => {
  const price = (over: Partial<ProjectPrice>): ProjectPrice => ({
    id: 'p',
    model_pattern: 'gpt-4o.*',
    input_price_per_million: 1,
    output_price_per_million: 2,
    cache_read_input_price_per_million: null,
    cache_creation_input_price_per_million: null,
    input_includes_cached_tokens: null,
    start_date: null,
    created_at: 0,
    ...over,
  });

  test('a project price beats the catalogue; the pattern is case-insensitive and matches the whole name', () => {
    const pricer = new Pricer([price({})]);
    close(pricer.costOf('GPT-4o-mini', 0, usage(1_000_000, 1_000_000), null), 3);
    // Not the whole name: the catalogue's price.
    close(pricer.costOf('openai/gpt-4o', 0, usage(1_000_000, 0), null), 2.5);
  });

  test('start dates: the latest start in force wins; before any start, the catalogue', () => {
    const pricer = new Pricer([
      price({ id: 'a', input_price_per_million: 1, start_date: 1_000 }),
      price({ id: 'b', input_price_per_million: 7, start_date: 2_000 }),
    ]);
    const at = (t: number) => pricer.costOf('gpt-4o', t, usage(1_000_000, 0), null);
    close(at(999), 2.5);
    close(at(1_000), 1);
    close(at(1_999), 1);
    close(at(2_000), 7);
    assert.equal(pricer.priceAt('gpt-4o', 2_000)?.projectPriceId, 'b');
  });

  test('without start dates the most recently created price wins, and always applies', () => {
    const pricer = new Pricer([
      price({ id: 'old', input_price_per_million: 1, created_at: 1 }),
      price({ id: 'new', input_price_per_million: 4, created_at: 2 }),
    ]);
    assert.equal(pricer.priceAt('gpt-4o', 0)?.projectPriceId, 'new');
  });

  test("the cache convention: the price's own, else the catalogue provider's, else OpenAI style", () => {
    const claude = new Pricer([
      price({ model_pattern: 'claude.*', cache_read_input_price_per_million: 0.5 }),
    ]);
    // Anthropic entry in the catalogue: exclusive. 1,000 input + 1,000 read.
    close(
      claude.costOf('claude-sonnet-4-5', 0, usage(1_000, 0, 1_000), null),
      (1_000 * 1 + 1_000 * 0.5) / 1e6,
    );
    const mine = new Pricer([price({ model_pattern: 'mine', cache_read_input_price_per_million: 0.5 })]);
    close(mine.costOf('mine', 0, usage(1_000, 0, 1_000), null), (1_000 * 0.5) / 1e6);
    const said = new Pricer([
      price({
        model_pattern: 'mine',
        cache_read_input_price_per_million: 0.5,
        input_includes_cached_tokens: false,
      }),
    ]);
    close(said.costOf('mine', 0, usage(1_000, 0, 1_000), null), (1_000 * 1 + 1_000 * 0.5) / 1e6);
  });

  test('hasPrice tells models without any price', () => {
    const pricer = new Pricer([price({ model_pattern: 'mine' })]);
    assert.equal(pricer.hasPrice('mine'), true);
    assert.equal(pricer.hasPrice('gpt-4o'), true);
    assert.equal(pricer.hasPrice('other'), false);
  });
});
