/**
 * Start-up times of the compiled build against running the TypeScript sources through tsx (what
 * `npx spanbase` and `npm start` did before the build): `spanbase --help`, and a server's first
 * healthy answer (GET /v2/healthcheck answering 200) from the moment its process is spawned, on a
 * fresh SQLite data directory each time. Prints median, min and max of --runs (default 5) and the
 * machine's load average, since other work on the cores moves these figures.
 *
 *   npm run bench:startup -- [--runs N]
 */
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { ensureServerBuilt } from '../scripts/build.js';

const ROOT = path.dirname(import.meta.dirname);
const { values } = parseArgs({ options: { runs: { type: 'string', default: '5' } } });
const RUNS = Number(values.runs);
const TSX = ['--import', 'tsx'];

function help(args: string[]): number {
  const t = performance.now();
  const r = spawnSync(process.execPath, args, { cwd: ROOT, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`${args.join(' ')}: ${r.stderr}`);
  return performance.now() - t;
}

async function firstHealthy(args: string[], port: number): Promise<number> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'spanbase-startup-'));
  const t = performance.now();
  const child = spawn(process.execPath, args, {
    cwd: ROOT,
    env: { ...process.env, SPANBASE_DATA_DIR: dir, SPANBASE_PORT: String(port), SPANBASE_LOG_LEVEL: 'warn' },
    stdio: 'ignore',
  });
  try {
    for (;;) {
      try {
        const res = await fetch(`http://127.0.0.1:${port}/v2/healthcheck`);
        if (res.status === 200) return performance.now() - t;
      } catch {
        // Not listening yet.
      }
      if (child.exitCode !== null) throw new Error(`${args.join(' ')} exited ${child.exitCode}`);
      await new Promise((r) => setTimeout(r, 10));
    }
  } finally {
    child.kill('SIGTERM');
    await new Promise((r) => child.once('exit', r));
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

async function measure(label: string, run: () => number | Promise<number>) {
  const times: number[] = [];
  for (let i = 0; i < RUNS; i++) times.push(await run());
  times.sort((a, b) => a - b);
  const f = (ms: number) => `${(ms / 1000).toFixed(2)} s`;
  console.log(
    `${label.padEnd(44)} median ${f(times[Math.floor(times.length / 2)])}  min ${f(times[0])}  max ${f(times.at(-1)!)}`,
  );
}

await ensureServerBuilt();
console.log(
  `${RUNS} runs each; load average ${os
    .loadavg()
    .map((l) => l.toFixed(1))
    .join(' ')}`,
);
await measure('spanbase --help (built: bin/spanbase.js)', () => help(['bin/spanbase.js', '--help']));
await measure('spanbase --help (tsx: src/cli.ts)', () => help([...TSX, 'src/cli.ts', '--help']));
await measure('first healthy answer (built: dist/main.js)', () => firstHealthy(['dist/main.js'], 18941));
await measure('first healthy answer (tsx: src/main.ts)', () => firstHealthy([...TSX, 'src/main.ts'], 18942));
console.log(
  `load average ${os
    .loadavg()
    .map((l) => l.toFixed(1))
    .join(' ')}`,
);
