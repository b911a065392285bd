/**
 * `spanbase datasets import` and `datasets export`: a JSONL or CSV file into a new dataset (through
 * the same streaming import as POST /v2/datasets, so the same faults name their line) and a dataset
 * version out as JSONL (one values dict a line) or CSV, with a progress bar on stderr when it is a
 * terminal. They act as the first admin unless `--email` names another user.
 */
import fs from 'node:fs';
import type { Writable } from 'node:stream';
import { stringify } from 'csv-stringify/sync';
import type { Config } from '../config.ts';
import { type DatasetFileFormat, fileRows } from '../domain/dataset-files.ts';
import type { Services } from '../services/index.ts';
import type { Caller } from '../services/auth.ts';
import { callerFor, progress, withServices } from './records-io.ts';

export interface DatasetImportArgs {
  name: string;
  project?: string;
  format?: DatasetFileFormat;
  email?: string;
}

async function projectId(s: Services, caller: Caller, project: string): Promise<string> {
  const found = (await s.projects.list(caller, {})).find((p) => p.id === project || p.name === project);
  if (!found) throw new Error(`no project ${project}`);
  return found.id;
}

export async function importDataset(config: Config, file: string, a: DatasetImportArgs) {
  return withServices(config, async (s) => {
    const caller = await callerFor(s, a.email);
    const format = a.format ?? (/\.csv$/i.test(file) ? 'csv' : 'jsonl');
    const bar = progress(fs.statSync(file).size, 'bytes');
    async function* counted() {
      for await (const chunk of fs.createReadStream(file)) {
        bar.tick(chunk.length);
        yield chunk as Buffer;
      }
    }
    try {
      return await s.datasets.create(
        caller,
        { name: a.name, project_id: a.project ? await projectId(s, caller, a.project) : null },
        fileRows(format, counted(), config.datasetMaxBytes),
      );
    } finally {
      bar.stop();
    }
  });
}

export interface DatasetExportArgs {
  /** A dataset name or id. */
  dataset: string;
  version?: number;
  format: 'jsonl' | 'csv';
  email?: string;
  output: Writable;
}

const PAGE = 1000;

export async function exportDataset(config: Config, a: DatasetExportArgs): Promise<number> {
  return withServices(config, async (s) => {
    const caller = await callerFor(s, a.email);
    const found = await s.datasets.list(caller, {
      name: { op: 'eq', values: [a.dataset], caseSensitive: true },
      sort: { column: 'created_at', ascending: false },
      offset: 0,
      limit: 1,
    });
    const id = found.datasets[0]?.id ?? a.dataset;
    const ds = await s.datasets.get(caller, id);
    const version = a.version ?? ds.current_version_index;
    const total = (await s.datasets.versions(caller, id, { ascending: true, offset: version - 1, limit: 1 }))
      .versions[0]?.num_rows;
    const bar = progress(total ?? ds.num_rows ?? 0, 'rows');
    const write = (text: string) =>
      a.output.write(text) ? Promise.resolve() : new Promise<void>((r) => a.output.once('drain', () => r()));
    let n = 0;
    try {
      for (let offset: number | null = 0; offset !== null; ) {
        const page = await s.datasets.rows(caller, id, { version, offset, limit: PAGE });
        const cell = (v: unknown) => (v !== null && typeof v === 'object' ? JSON.stringify(v) : v);
        const text =
          a.format === 'jsonl'
            ? page.rows.map((r) => `${JSON.stringify(r.values_dict)}\n`).join('')
            : stringify(
                page.rows.map((r) => r.values.map(cell)),
                offset === 0 ? { header: true, columns: page.column_names } : {},
              );
        await write(text);
        n += page.rows.length;
        bar.tick(page.rows.length);
        offset = page.next_offset;
      }
    } finally {
      bar.stop();
    }
    return n;
  });
}
