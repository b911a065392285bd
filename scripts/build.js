// Builds the server and the CLI (src/) into dist/ as JavaScript, what `npm start` and `npx spanbase`
// run: TypeScript is not compiled at each start.
//
//   node scripts/build.js             build the server now (npm install runs this: postinstall)
//   node scripts/build.js --if-stale  build the server, and the console (web/build.ts), only where a
//                                     source changed since the last build (npm start)
//
// esbuild transpiles each module of src/ to the same path under dist/ (no bundle): thread modules
// load by their file name (store/threads.ts), files found relative to a module (the console's
// web/dist) stay where they were, and the CLI keeps loading what a command needs only when it runs.
// Relative imports name `.ts` files, so each is rewritten to `.js`; packages stay imports of
// node_modules. esbuild rather than tsc: it takes well under a second for the whole of src/ (tsc
// would type-check it all again, which `npm run typecheck` already does), and it is already installed
// (tsx and vite run on it). Staleness is judged by content: a hash of every file under src/, of
// package-lock.json and of this script.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { ROOT, isStale, withLock, writeStamp } from './stamp.js';

const SRC = path.join(ROOT, 'src');
export const DIST = path.join(ROOT, 'dist');
const STAMP = path.join(DIST, '.sources.json');
const LOCK = path.join(ROOT, '.build.lock');

/** Every file the server is built from. */
function sources() {
  const files = fs
    .readdirSync(SRC, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => path.join(e.parentPath, e.name));
  return [...files, path.join(ROOT, 'package-lock.json'), import.meta.filename].sort();
}

export function serverIsStale() {
  return !fs.existsSync(path.join(DIST, 'cli.js')) || isStale(STAMP, sources());
}

export async function buildServer() {
  const esbuild = await import('esbuild');
  const files = sources();
  fs.rmSync(DIST, { recursive: true, force: true });
  const modules = files.filter((f) => f.startsWith(SRC) && f.endsWith('.ts') && !f.endsWith('.d.ts'));
  await esbuild.build({
    entryPoints: modules,
    outdir: DIST,
    outbase: SRC,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    logLevel: 'warning',
    plugins: [
      {
        name: 'one-module-per-file',
        setup(build) {
          // JSON is bundled into the module that imports it (an external import would lose its
          // `with { type: 'json' }`).
          build.onResolve({ filter: /.*/ }, (args) =>
            args.kind === 'entry-point' || args.path.endsWith('.json')
              ? undefined
              : { path: args.path.replace(/\.ts$/, '.js'), external: true },
          );
        },
      },
    ],
  });
  // Modules written in JavaScript (threads that load without a TypeScript loader) as they are.
  for (const f of files) {
    if (!f.startsWith(SRC) || !f.endsWith('.js')) continue;
    const to = path.join(DIST, path.relative(SRC, f));
    fs.mkdirSync(path.dirname(to), { recursive: true });
    fs.copyFileSync(f, to);
  }
  writeStamp(STAMP, files);
}

/** Builds the server when stale; processes that ask at once take turns, the later find it fresh. */
export function ensureServerBuilt() {
  if (!serverIsStale()) return Promise.resolve(false);
  return withLock(LOCK, async () => {
    if (!serverIsStale()) return false;
    await buildServer();
    return true;
  });
}

/** The console's stamp (web/build.ts writes it): checked here, so npm start needs no tsx when fresh. */
function consoleIsStale() {
  return (
    !fs.existsSync(path.join(ROOT, 'web/dist/index.html')) ||
    isStale(path.join(ROOT, 'web/dist/.sources.json'))
  );
}

if (import.meta.filename === process.argv[1]) {
  const started = Date.now();
  const ifStale = process.argv.includes('--if-stale');
  try {
    if (await (ifStale ? ensureServerBuilt() : buildServer().then(() => true)))
      console.log(`spanbase: server built into dist in ${((Date.now() - started) / 1000).toFixed(1)} s`);
    if (ifStale && consoleIsStale()) {
      const r = spawnSync(
        process.execPath,
        ['--import', 'tsx', path.join(ROOT, 'web/build.ts'), '--if-stale'],
        {
          stdio: 'inherit',
        },
      );
      if (r.status !== 0) process.exit(r.status ?? 1);
    }
  } catch (err) {
    console.error(`spanbase: building the server failed: ${err instanceof Error ? err.message : err}`);
    process.exit(1);
  }
}
