/**
 * The one way every thread of the store starts (search and widget-data readers, the SQLite text
 * indexer, the WAL checkpointer): a module of this folder, its data typed by the module.
 *
 * Under tsx (TypeScript sources, no build step) a `.ts` module needs tsx registered in its thread
 * first; a `.js` module loads as it is (the checkpointer's, which needs only better-sqlite3 and stays
 * small: tsx would add about 23 MB to the thread).
 */
import { Worker } from 'node:worker_threads';

const UNDER_TSX = import.meta.url.endsWith('.ts');

/**
 * Starts `module` (a file name in this folder, e.g. `reader-thread.ts`) on a new thread with
 * `workerData`. A compiled build runs the `.js` file of a `.ts` module.
 */
export function startThread<Data>(
  module: `${string}.ts` | `${string}.js`,
  workerData: Data,
  resourceLimits?: { maxYoungGenerationSizeMb?: number },
): Worker {
  const ts = module.endsWith('.ts');
  const url = new URL(ts && !UNDER_TSX ? module.replace(/\.ts$/, '.js') : module, import.meta.url);
  if (!ts || !UNDER_TSX) return new Worker(url, { workerData, resourceLimits });
  const tsx = import.meta.resolve('tsx/esm/api');
  const code = `import(${JSON.stringify(tsx)}).then((m) => { m.register(); return import(${JSON.stringify(url.href)}); })`;
  return new Worker(code, { eval: true, workerData, resourceLimits });
}
