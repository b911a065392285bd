/**
 * The layering rules of the README's architecture section, checked on every import of src/: a
 * module imports only from its own layer and the layers it may use, and no modules import each
 * other in a circle.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';

const SRC = path.resolve(import.meta.dirname, '../../src');

/** Which layers each layer may import (besides itself). `config` is src/config.ts. */
const MAY_IMPORT: Record<string, string[]> = {
  domain: [],
  query: ['domain'],
  schemas: ['domain', 'query'],
  store: ['domain', 'query', 'config'],
  services: ['domain', 'query', 'schemas', 'store', 'config'],
  http: ['domain', 'schemas', 'services', 'config'],
  config: [],
  // src/main.ts, server.ts, cli.ts: the entry points wire everything.
  entry: ['domain', 'query', 'schemas', 'store', 'services', 'http', 'config', 'cli'],
  // src/cli: the commands of `spanbase` beyond serving, which start the services as the entry points do.
  cli: ['domain', 'query', 'schemas', 'store', 'services', 'http', 'config', 'entry'],
};

function layerOf(file: string): string {
  const rel = path.relative(SRC, file).split(path.sep);
  if (rel.length === 1) return rel[0] === 'config.ts' ? 'config' : 'entry';
  return rel[0];
}

function sources(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) return sources(p);
    return /\.(ts|js)$/.test(e.name) ? [p] : [];
  });
}

/** The src/ files a module imports (static, re-exports and dynamic imports of relative paths). */
function importsOf(file: string, text = fs.readFileSync(file, 'utf8')): string[] {
  const found: string[] = [];
  const patterns = [
    /\bfrom\s+['"](\.[^'"]+)['"]/g,
    /\bimport\s*\(\s*['"](\.[^'"]+)['"]\s*\)/g,
    /^import\s+['"](\.[^'"]+)['"]/gm,
  ];
  for (const re of patterns)
    for (const m of text.matchAll(re)) {
      const target = path.resolve(path.dirname(file), m[1]);
      if (target.startsWith(SRC + path.sep)) found.push(target);
    }
  return found;
}

/** Each import that goes the wrong way, as `from -> to (layer -> layer)`. */
function wrongWay(files: readonly string[], read: (f: string) => string[]): string[] {
  const out: string[] = [];
  for (const file of files) {
    const from = layerOf(file);
    for (const target of read(file)) {
      const to = layerOf(target);
      if (to !== from && !MAY_IMPORT[from].includes(to))
        out.push(`${path.relative(SRC, file)} -> ${path.relative(SRC, target)} (${from} -> ${to})`);
    }
  }
  return out;
}

/** The import circles among `files` (each as the modules on it). */
function circles(files: readonly string[], read: (f: string) => string[]): string[][] {
  const graph = new Map(files.map((f) => [f, read(f).filter((t) => files.includes(t))]));
  const state = new Map<string, 'open' | 'done'>();
  const stack: string[] = [];
  const out: string[][] = [];
  const visit = (f: string) => {
    state.set(f, 'open');
    stack.push(f);
    for (const t of graph.get(f) ?? []) {
      if (state.get(t) === 'open') out.push(stack.slice(stack.indexOf(t)).map((s) => path.relative(SRC, s)));
      else if (!state.has(t)) visit(t);
    }
    stack.pop();
    state.set(f, 'done');
  };
  for (const f of files) if (!state.has(f)) visit(f);
  return out;
}

const files = sources(SRC);

test('every import of src/ goes the way the layers allow', () => {
  assert.ok(files.length > 50);
  assert.deepEqual(
    wrongWay(files, (f) => importsOf(f)),
    [],
  );
});

test('no modules of src/ import each other in a circle', () => {
  assert.deepEqual(
    circles(files, (f) => importsOf(f)),
    [],
  );
});

test('the checks catch a store module that imports a service, and a circle', () => {
  const store = path.join(SRC, 'store', 'x.ts');
  const service = path.join(SRC, 'services', 'y.ts');
  const read = (f: string) =>
    importsOf(
      f,
      f === store ? "import { y } from '../services/y.ts';" : "import { x } from '../store/x.ts';",
    );
  assert.deepEqual(wrongWay([store, service], read), ['store/x.ts -> services/y.ts (store -> services)']);
  assert.deepEqual(circles([store, service], read), [['store/x.ts', 'services/y.ts']]);
});
