/**
 * Builds the console (web/) into web/dist with Vite, and writes a .br and a .gz beside each asset so
 * the server sends them compressed without compressing on every request.
 *
 *   tsx web/build.ts             build now (npm install runs this: postinstall)
 *   tsx web/build.ts --if-stale  build only when a source changed since the last build
 *
 * "Changed" is judged by content: the build records a hash of every source file it read (the console's
 * own modules and anything it imports from src/), of its config and of package-lock.json (the stamp
 * and the lock are scripts/stamp.js, shared with the server's build; `npm start` checks this stamp
 * through scripts/build.js).
 */
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import zlib from 'node:zlib';
import { ROOT, isStale as stampIsStale, withLock, writeStamp } from '../scripts/stamp.js';

const WEB = import.meta.dirname;
const DIST = path.join(WEB, 'dist');
const STAMP = path.join(DIST, '.sources.json');
const ALWAYS = [
  path.join(WEB, 'index.html'),
  path.join(WEB, 'vite.config.ts'),
  path.join(ROOT, 'package-lock.json'),
];

/** True when web/dist is missing or any file it was built from has changed. */
export function isStale(): boolean {
  return !fs.existsSync(path.join(DIST, 'index.html')) || stampIsStale(STAMP);
}

const gzip = promisify(zlib.gzip);
const brotli = promisify(zlib.brotliCompress);

export async function buildConsole(): Promise<void> {
  const { build } = await import('vite');
  const read = new Set<string>();
  await build({
    configFile: path.join(WEB, 'vite.config.ts'),
    logLevel: 'warn',
    plugins: [
      {
        name: 'spanbase-record-sources',
        // Every module the bundle was made from, outside node_modules (package-lock.json covers those).
        buildEnd() {
          for (const id of this.getModuleIds()) {
            if (!id.includes('node_modules') && path.isAbsolute(id)) read.add(id.split('?')[0]);
          }
        },
      },
    ],
  });
  const assets = path.join(DIST, 'assets');
  for (const name of fs.readdirSync(assets)) {
    if (!/\.(js|css|svg|json)$/.test(name)) continue;
    const body = fs.readFileSync(path.join(assets, name));
    fs.writeFileSync(path.join(assets, `${name}.gz`), await gzip(body, { level: 9 }));
    fs.writeFileSync(
      path.join(assets, `${name}.br`),
      await brotli(body, { params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 11 } }),
    );
  }
  writeStamp(STAMP, [...new Set([...ALWAYS, ...read])].sort());
}

const LOCK = path.join(WEB, '.build.lock');

/**
 * Builds when stale; for the server's start and the browser tests. Processes that ask at once (test
 * files run in parallel) take turns on a lock file, and the later ones find the build fresh.
 */
export function ensureConsoleBuilt(): Promise<boolean> {
  return withLock(LOCK, async () => {
    if (!isStale()) return false;
    await buildConsole();
    return true;
  });
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const started = Date.now();
  const build = process.argv.includes('--if-stale') ? ensureConsoleBuilt() : buildConsole().then(() => true);
  build.then(
    (built) => {
      if (built)
        console.log(
          `spanbase: console built into web/dist in ${((Date.now() - started) / 1000).toFixed(1)} s`,
        );
    },
    (err) => {
      console.error(`spanbase: building the console failed: ${err instanceof Error ? err.message : err}`);
      process.exit(1);
    },
  );
}
