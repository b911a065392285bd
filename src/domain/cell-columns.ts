import type { CellTable } from './cell-aggregates.ts';

/**
 * Widget-data cells in columns, and the choice of the groups a dashboard answer shows.
 *
 * A `group_by` over a column with many values (a name per session, say) yields a cell per bucket
 * and value: about 100,000 cells over 1,000,000 records, of which an answer shows the few largest
 * groups. Cells therefore travel in columns (typed arrays, moved between threads without a copy),
 * the groups are ranked on their counts alone, and only the shown groups' cells become objects.
 */

/**
 * Cells in columns: cell i is bucket `b[i]` (-1 for a whole-range total) of group `groups[i]`;
 * aggregate `names[k]` of cell i is `values[k][i]`, NaN standing for SQL NULL.
 */
export interface CellColumns {
  names: string[];
  groups: unknown[];
  b: Int32Array;
  values: Float64Array[];
}

/**
 * One cell as an object: `b` the bucket index (-1 in totals), `g` the group value (null without
 * group_by), `n` the matching records, and per metric `<key>_n` (records with a value),
 * `<key>_sum`, `<key>_min`, `<key>_max`, `<key>_true`, `<key>_p<percent>` (store/widget-cells.ts
 * aggregateSpecs).
 */
export type CellRow = { b: number; g: unknown; n: number } & Record<string, unknown>;

/** The aggregate a column holds as a number or null (SQLite integers, PostgreSQL numeric text). */
function num(v: unknown): number {
  if (v === null || v === undefined) return Number.NaN;
  return typeof v === 'number' ? v : Number(v);
}

/**
 * Collects cells given as rows of `[b, g, ...aggregates]` (the aggregates named by `names`) into
 * columns; `bucket` overrides the rows' bucket when the statement covered a single one.
 */
export class CellCollector {
  private readonly groups: unknown[] = [];
  private readonly b: number[] = [];
  private readonly values: number[][];

  constructor(private readonly names: string[]) {
    this.values = names.map(() => []);
  }

  add(row: readonly unknown[], bucket?: number): void {
    this.b.push(bucket ?? Number(row[0]));
    this.groups.push(row[1] ?? null);
    for (let k = 0; k < this.names.length; k++) this.values[k].push(num(row[k + 2]));
  }

  /** Adds cells given in columns (domain/cell-aggregates.ts), the aggregates in `names` order. */
  addColumns(t: CellTable): void {
    for (let c = 0; c < t.b.length; c++) {
      this.b.push(t.b[c]);
      this.groups.push(t.g[c] ?? null);
    }
    t.values.forEach((col, k) => {
      const into = this.values[k];
      for (const v of col) into.push(v);
    });
  }

  done(): CellColumns {
    return {
      names: this.names,
      groups: this.groups,
      b: Int32Array.from(this.b),
      values: this.values.map((v) => Float64Array.from(v)),
    };
  }
}

/** The buffers of cells, to move them to another thread instead of copying them. */
export function cellBuffers(c: CellColumns | null): ArrayBuffer[] {
  if (!c) return [];
  return [c.b.buffer, ...c.values.map((v) => v.buffer)] as ArrayBuffer[];
}

/** Group values in the order answers list them: numbers by value, others as text, null last. */
export function compareGroupValues(x: unknown, y: unknown): number {
  if (x === y) return 0;
  if (x === null) return 1;
  if (y === null) return -1;
  if (typeof x === 'number' && typeof y === 'number') return x - y;
  const a = String(x);
  const b = String(y);
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Records per group value over every part's cells (`n`). */
export function groupCounts(parts: readonly CellColumns[]): Map<unknown, number> {
  const totals = new Map<unknown, number>();
  for (const p of parts) {
    const n = p.values[p.names.indexOf('n')];
    p.groups.forEach((value, i) => {
      totals.set(value, (totals.get(value) ?? 0) + n[i]);
    });
  }
  return totals;
}

/**
 * The groups to show: by matching records over the whole range, most first, ties by value; at
 * most `limit`. Also how many groups there are in all.
 */
export function rankGroups(counts: Map<unknown, number>, limit: number): { shown: unknown[]; count: number } {
  // Keeps the best `limit` in order: one comparison per group with the last kept, as a rule.
  const best: [unknown, number][] = [];
  const before = (a: [unknown, number], b: [unknown, number]) =>
    a[1] !== b[1] ? a[1] > b[1] : compareGroupValues(a[0], b[0]) < 0;
  for (const entry of counts) {
    if (best.length === limit && !before(entry, best[best.length - 1])) continue;
    let at = best.length;
    while (at > 0 && before(entry, best[at - 1])) at--;
    best.splice(at, 0, entry);
    if (best.length > limit) best.pop();
  }
  return { shown: best.map(([value]) => value), count: counts.size };
}

/** The cells of the given groups as objects (NULL aggregates as null). */
export function rowsOf(parts: CellColumns[], groups: readonly unknown[]): CellRow[] {
  const wanted = new Set(groups);
  const rows: CellRow[] = [];
  for (const p of parts) {
    for (let i = 0; i < p.b.length; i++) {
      if (!wanted.has(p.groups[i])) continue;
      const row = { b: p.b[i], g: p.groups[i] } as CellRow;
      p.names.forEach((name, k) => {
        const v = p.values[k][i];
        row[name] = Number.isNaN(v) ? null : v;
      });
      rows.push(row);
    }
  }
  return rows;
}
