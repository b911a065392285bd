/**
 * The README's examples, run as a new user runs them: every `sh` block in order, in bash, against a
 * real server, twice (a second paste must work too), on each store. After each command the README
 * shows its answer on `# → ` lines (`…` stands for anything); a line `# → or, run again: ...` is what
 * the second run answers instead. Each block's output must show those answers in order, and an
 * error answer (`{"detail"`) only where the README shows one. Blocks marked `shell` (installing,
 * starting the server, PostgreSQL setup) are not run.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { type ChildServer, startChildServer } from '../helpers/child-server.ts';
import { storesUnderTest } from '../helpers/server.ts';

const ROOT = path.resolve(import.meta.dirname, '..', '..');
const README = fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8');
/** The address the README's examples use, set once; the test points it at its own server. */
const BASE = 'http://127.0.0.1:8088';

interface Expectation {
  first: RegExp;
  /** What a second run answers instead, when the README says. */
  again: RegExp | null;
  text: string;
}

interface Block {
  line: number;
  code: string;
  expect: Expectation[];
}

/** `…` matches anything; the rest literally; the whole line. */
function pattern(text: string): RegExp {
  const parts = text.split('…').map((p) => p.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'));
  return new RegExp(`^${parts.join('.*')}$`);
}

function runnableBlocks(markdown: string): Block[] {
  const blocks: Block[] = [];
  for (const m of markdown.matchAll(/^```(\w*)\n([\s\S]*?)^```$/gm)) {
    if (m[1] !== 'sh') continue;
    const expect: Expectation[] = [];
    for (const line of m[2].split('\n')) {
      const shown = /^# → (.*)$/.exec(line);
      if (!shown) continue;
      const again = /^or, run again: (.*)$/.exec(shown[1]);
      if (again) {
        assert.ok(expect.length, `a "run again" answer with nothing before it: ${line}`);
        expect[expect.length - 1].again = pattern(again[1]);
      } else expect.push({ first: pattern(shown[1]), again: null, text: shown[1] });
    }
    blocks.push({ line: markdown.slice(0, m.index).split('\n').length, code: m[2], expect });
  }
  return blocks;
}

const MARK = '@@ end of README block @@';

test('the README explains Spanbase by itself and sets the server address once', () => {
  assert.doesNotMatch(README, /\.\.\/shared|spec\/api\.md|decisions\.md|DESIGN\.md/);
  assert.ok(fs.existsSync(path.join(ROOT, 'docs', 'api.md')), 'the API guide the README links to');
  const code = runnableBlocks(README)
    .map((b) => b.code)
    .join('\n');
  assert.equal(code.split(BASE).length - 1, 1, `${BASE} once, in the export of SPANBASE_URL`);
  assert.match(code, new RegExp(`^export SPANBASE_URL=${BASE}$`, 'm'));
  const commands = code
    .replace(BASE, '')
    .split('\n')
    .filter((l) => !l.startsWith('#'));
  assert.doesNotMatch(commands.join('\n'), /localhost|127\.0\.0\.1|:8088/);
});

for (const store of storesUnderTest()) {
  describe(`the README's examples [${store}]`, () => {
    let server: ChildServer;
    let cwd: string;
    const blocks = runnableBlocks(README);
    before(async () => {
      server = await startChildServer(store);
      // The examples run where the server was started: `data/initial-admin-key` is its key.
      cwd = fs.mkdtempSync(path.join(os.tmpdir(), 'spanbase-readme-'));
      fs.symlinkSync(server.dataDir, path.join(cwd, 'data'));
    });
    after(async () => {
      await server.close();
      fs.rmSync(cwd, { recursive: true, force: true });
    });

    for (const pass of [1, 2]) {
      test(`run ${pass}: every block runs and answers what the README shows`, () => {
        assert.ok(blocks.length >= 10, `only ${blocks.length} runnable blocks`);
        const script = [
          'set -eo pipefail',
          ...blocks.map((b) => `${b.code.replace(BASE, server.url)}\necho '${MARK}'`),
        ].join('\n');
        const r = spawnSync('bash', ['-c', script], {
          cwd,
          env: { PATH: process.env.PATH ?? '', HOME: cwd, LANG: 'C.UTF-8' },
          encoding: 'utf8',
          timeout: 240_000,
        });
        const outputs = r.stdout.split(`${MARK}\n`);
        const failed = Math.min(outputs.length - 1, blocks.length - 1);
        const where = (i: number) =>
          `README line ${blocks[i].line}:\n${blocks[i].code}\n--- output:\n${outputs[i] ?? ''}\n--- stderr:\n${r.stderr}`;
        assert.equal(r.status, 0, `bash exited ${r.status} in the block at ${where(failed)}`);
        assert.equal(r.stderr, '', `stderr: ${r.stderr}`);
        assert.equal(outputs.length, blocks.length + 1);
        blocks.forEach((b, i) => {
          const lines = outputs[i].split('\n');
          let at = 0;
          const matched = new Set<number>();
          for (const e of b.expect) {
            const want = pass === 2 && e.again ? [e.first, e.again] : [e.first];
            while (at < lines.length && !want.some((w) => w.test(lines[at]))) at++;
            assert.ok(at < lines.length, `no line answers "${e.text}" in the block at ${where(i)}`);
            matched.add(at++);
          }
          for (const [n, l] of lines.entries())
            assert.ok(
              !l.includes('{"detail"') || matched.has(n),
              `an error the README does not show: ${l}\nin the block at ${where(i)}`,
            );
        });
      });
    }
  });
}
