/**
 * Widget data on SQLite, on reader threads (reader-thread.ts) when the database is a file.
 *
 * SQLite has no hash aggregation: GROUP BY sorts every matching row. One statement per bucket (or
 * per run of buckets, at most MAX_CHUNKS statements) keeps each sort small, and the
 * (run_id, created_at) index reads each bucket's rows as one range; that measured faster than one
 * statement over the whole range. Grouped cells read their values as JSON arrays and group them in
 * JavaScript (domain/cell-aggregates.ts), without SQLite's sort; a large bucket in pieces.
 */
import { type Kysely, sql } from 'kysely';
import { GroupScan, PercentilePlan, numbers } from '../domain/cell-aggregates.ts';
import {
  CellCollector,
  type CellColumns,
  type CellRow,
  groupCounts,
  rowsOf,
} from '../domain/cell-columns.ts';
import type { TextCandidates } from '../query/compile.ts';
import { sqliteSql } from '../query/sql-sqlite.ts';
import type { Store } from './db.ts';
import type { ReaderPool } from './reader-pool.ts';
import { SqliteTextCandidates } from './search-text.ts';
import type { DB } from './tables.ts';
import {
  type CellQuery,
  type ThreadCells,
  type WidgetCells,
  type WidgetCellsStore,
  aggregateSpecs,
  bucketExpr,
  cellStatement,
  cellWhere,
  groupExpr,
  readValue,
  shownGroups,
  totalPercentileMetrics,
  valueReads,
} from './widget-cells.ts';

/** Parameters that mark the range bounds in a statement compiled once and run per chunk. */
const LOW_MARK = -1.234567e300;
const HIGH_MARK = -2.345678e300;

/** At most this many text group values read as numbers (see valuesStatement). */
const DICTIONARY_SIZE = 32;

/** At most this many statements per query (each covers whole buckets). */
const MAX_CHUNKS = 400;

/**
 * A grouped read whose range holds more records than this is read in pieces of about this many (by
 * time; see PIECE_END_SQL), kept as group indices and numbers and joined once whole. Read whole, a
 * bucket of 1,000,000 records (a daily dashboard over a busy day) made SQLite build a JSON string of
 * several MB per column, copied into JavaScript and parsed into arrays: the server's peak RSS drawing
 * such a dashboard by scan was 336-343 MB, against 251-263 MB in pieces, at the same speed. Pieces of
 * 65,536 records were 20-40% slower, probably because their strings and arrays (over 128 KiB) each
 * took a memory map of their own (MALLOC_MMAP_THRESHOLD_) and a V8 large object.
 */
const PIECE_RECORDS = 8192;

/**
 * The time of the record that follows the first pieceRecords of the run's records in [low, high)
 * (an index-only walk of run and time), or none when there are no more. Records of one microsecond
 * stay in one piece.
 */
const PIECE_END_SQL = `select created_at from records where run_id = ? and created_at >= ? and created_at < ?
  order by created_at limit 1 offset ?`;

export class SqliteWidgetCells implements WidgetCellsStore {
  private readonly readers: ReaderPool | null;
  private readonly text: SqliteTextCandidates;

  /**
   * Widget data is read on the store's reader threads; without them (the threads' own connections),
   * here. `pieceRecords`: the size of a grouped read's pieces (tests make it small).
   */
  constructor(
    private readonly store: Store,
    private readonly pieceRecords = PIECE_RECORDS,
  ) {
    this.text = new SqliteTextCandidates(store.sqlite!);
    this.readers = store.readers;
  }

  async cells(q: CellQuery, groupLimit: number): Promise<WidgetCells> {
    const needTotals = q.metrics.some((m) => m.totalPercentiles.size > 0);
    const finish = (parts: CellColumns[], totals: CellColumns | null): WidgetCells => {
      const { shown, groupCount } = shownGroups(q, groupCounts(parts), groupLimit);
      return {
        shown,
        groupCount,
        cells: rowsOf(parts, shown),
        percentileTotals: totals ? rowsOf([totals], shown) : null,
      };
    };
    const readers = this.readers;
    if (!readers) {
      const here = await this.cellsHere(q, { from: 0, to: q.buckets, totals: needTotals });
      return finish([here.cells], here.percentileTotals);
    }
    // With reader threads: the buckets split between them (and the totals pass on its own), off the
    // main thread where requests and ingestion run.
    const parts = Math.min(readers.max, q.buckets);
    const split = Array.from({ length: parts }, (_, k) => ({
      from: Math.floor((k * q.buckets) / parts),
      to: Math.floor(((k + 1) * q.buckets) / parts),
    }));
    if (!q.group) {
      const totals = needTotals ? readers.run('cells', { q, from: 0, to: 0, totals: true }) : null;
      const done = await Promise.all(split.map((p) => readers.run('cells', { q, ...p, totals: false })));
      return finish(
        done.map((d) => d.cells),
        totals ? (await totals).percentileTotals : null,
      );
    }
    // Grouped: each thread counts its records per group and keeps them; the groups are ranked over
    // every thread's counts; then each thread computes the cells of the shown groups only and, for the
    // metrics whose whole-range percentiles are wanted, counts their values by bin; last, each hands
    // over its values in the bins that hold the wanted ranks (PercentilePlan).
    const scans = await this.scan(
      readers,
      split.map((p) => ({ q, ...p, totals: false })),
    );
    const counts = new Map<unknown, number>();
    for (const s of scans)
      s.groups.forEach((value, i) => {
        counts.set(value, (counts.get(value) ?? 0) + s.counts[i]);
      });
    const { shown, groupCount } = shownGroups(q, counts, groupLimit);
    try {
      const taken = await Promise.all(
        scans.map((s) => readers.send(s.reader, 'take', { scan: s.id, shown }).answer),
      );
      let percentileTotals: CellRow[] | null = null;
      if (needTotals) {
        const plan = new PercentilePlan(
          aggregateSpecs(q.metrics, true),
          shown,
          taken.map((t) => t.bins),
        );
        const found = await Promise.all(
          scans.map((s) => readers.send(s.reader, 'binValues', { scan: s.id, asks: plan.asks }).answer),
        );
        percentileTotals = plan.rows(found) as CellRow[];
      }
      return {
        shown,
        groupCount,
        cells: rowsOf(
          taken.map((t) => t.cells),
          shown,
        ),
        percentileTotals,
      };
    } catch (err) {
      // Scans a thread still keeps (a pass failed elsewhere) are dropped.
      for (const s of scans) void readers.send(s.reader, 'drop', { scan: s.id }).answer.catch(() => {});
      throw err;
    }
  }

  /**
   * Grouped scans, one per job, each kept by the thread that ran it until its cells are taken. If
   * any scan fails, the others are dropped and the failure is thrown.
   */
  private async scan(
    readers: ReaderPool,
    jobs: { q: CellQuery; from: number; to: number; totals: boolean }[],
  ) {
    const started = jobs.map((job) => {
      const reader = readers.pick();
      return { reader, ...readers.send(reader, 'scan', job) };
    });
    const settled = await Promise.allSettled(started.map((s) => s.answer));
    const failed = settled.find((r) => r.status === 'rejected');
    if (failed) {
      started.forEach((s, k) => {
        if (settled[k].status === 'fulfilled')
          void readers.send(s.reader, 'drop', { scan: s.id }).answer.catch(() => {});
      });
      throw (failed as PromiseRejectedResult).reason;
    }
    return started.map((s, k) => ({
      reader: s.reader,
      id: s.id,
      ...(settled[k] as PromiseFulfilledResult<{ groups: unknown[]; counts: Float64Array }>).value,
    }));
  }

  /**
   * On this connection: the grouped records of buckets [from, to), counted per group and kept for
   * `GroupScan.cells` (one read transaction, one snapshot).
   */
  scanHere(q: CellQuery, part: { from: number; to: number }): Promise<GroupScan> {
    const scan = new GroupScan(aggregateSpecs(q.metrics, false), totalPercentileMetrics(q.metrics));
    return this.cellsHere(q, { ...part, totals: false }, scan).then(() => scan);
  }

  /**
   * On this connection: the cells of buckets [from, to), and the percentile totals when asked, in
   * one read transaction (one snapshot).
   */
  cellsHere(
    q: CellQuery,
    part: { from: number; to: number; totals: boolean },
    scan?: GroupScan,
  ): Promise<ThreadCells> {
    return this.store.db.connection().execute(async (conn) => {
      const candidates = await this.text.candidates(conn, q.tree);
      const raw = this.store.sqlite!;
      const perChunk = Math.max(1, Math.ceil(q.buckets / MAX_CHUNKS));
      // One bucket per statement (the usual case): the bucket is known, not computed per row.
      const single = perChunk === 1;
      const range = { low: LOW_MARK, high: HIGH_MARK };
      const specs = aggregateSpecs(q.metrics, false);
      // Grouped cells: the values as JSON arrays, grouped here without SQLite's sort; otherwise the
      // aggregates in SQL (one row per statement, no GROUP BY).
      const grouped = q.group !== null;
      const byValues = grouped ? valuesStatement(q, { bucket: !single, ...range }, candidates) : null;
      const query =
        byValues?.query ??
        cellStatement(q, { bucket: !single, percentilesOnly: false, ...range }, sqliteSql, candidates).query;
      const cells = new CellCollector(specs.map((a) => a.name));
      // Grouped cells go through a scan: the caller's, kept for its next steps, or one of this call's.
      const groups = byValues ? (scan ?? new GroupScan(specs, [])) : null;
      let totals: CellColumns | null = null;
      raw.exec('begin');
      try {
        if (part.to > part.from) {
          const prepare = (built: typeof query) => {
            const compiled = built.compile(conn as Kysely<DB>);
            return {
              stmt: raw.prepare(compiled.sql).raw(true),
              params: [...compiled.parameters],
              lowAt: compiled.parameters.indexOf(LOW_MARK),
              highAt: compiled.parameters.indexOf(HIGH_MARK),
            };
          };
          let { stmt, params, lowAt, highAt } = prepare(query);
          // A text group_by: after the first read, the values met often are read as numbers.
          let coding = groups !== null && q.group?.dataType === 'text';
          const pieceEnd = groups ? raw.prepare(PIECE_END_SQL).pluck() : null;
          // Each value list's column among a grouped read's arrays (after bucket and group), or -1.
          const readAt = byValues ? valueReads(q.metrics).map((_, r) => byValues.read.indexOf(r)) : [];
          for (let i = part.from; i < part.to; i += perChunk) {
            const low = Math.max(q.startUs, q.firstUs + i * q.sizeUs);
            const high = Math.min(q.endUs, q.firstUs + Math.min(i + perChunk, part.to) * q.sizeUs);
            if (groups && pieceEnd) {
              for (let from = low; from < high; ) {
                const next = pieceEnd.get(q.runId, from, high, this.pieceRecords) as number | undefined;
                const to = next === undefined ? high : Math.max(next, from + 1);
                params[lowAt] = from;
                params[highAt] = to;
                const arrays = (stmt.get(params) as string[]).map((a) => JSON.parse(a) as (number | null)[]);
                const bucket = single ? i : (arrays.shift() as number[]);
                const values = arrays.shift()!;
                const metrics = readAt.map((at) => (at < 0 ? null : numbers(arrays[at])));
                groups.add({ bucket, groups: values, metrics }, to === high);
                from = to;
                if (coding && values.length > 0) {
                  coding = false;
                  const dictionary = groups.frequent(DICTIONARY_SIZE, Math.max(2, values.length / 200));
                  if (dictionary.length) {
                    groups.useCodes(dictionary);
                    const coded = valuesStatement(q, { bucket: !single, ...range }, candidates, dictionary);
                    ({ stmt, params, lowAt, highAt } = prepare(coded.query));
                  }
                }
              }
              continue;
            }
            params[lowAt] = low;
            params[highAt] = high;
            for (const row of stmt.all(params) as unknown[][]) {
              if (!single) cells.add(row);
              // An aggregate without GROUP BY answers one row even for no records (`n`, the third
              // column, is 0).
              else if ((row[2] as number) > 0) cells.add(row, i);
            }
          }
        }
        if (groups && !scan) cells.addColumns(groups.cells(groups.groupCounts().groups));
        if (part.totals) {
          const whole = { low: q.startUs, high: q.endUs };
          const t = cellStatement(
            q,
            { bucket: false, percentilesOnly: true, ...whole },
            sqliteSql,
            candidates,
          );
          const compiled = t.query.compile(conn as Kysely<DB>);
          const out = new CellCollector(t.aggregates);
          for (const row of raw
            .prepare(compiled.sql)
            .raw(true)
            .all([...compiled.parameters]) as unknown[][])
            out.add(row);
          totals = out.done();
        }
        return { cells: cells.done(), percentileTotals: totals };
      } finally {
        raw.exec('commit');
      }
    });
  }
}

/**
 * For grouped cells: one row of JSON arrays (bucket when `bucket`, group, and the values of the
 * metrics in `read`) over the matching records, grouped in JavaScript (domain/cell-aggregates.ts).
 * A metric that is never NULL and only counted needs no values.
 */
function valuesStatement(
  q: CellQuery,
  o: { bucket: boolean; low: number; high: number },
  candidates?: TextCandidates,
  dictionary: readonly string[] = [],
) {
  const reads = valueReads(q.metrics);
  const values = reads.map((r) => readValue(r, q.metrics, sqliteSql));
  const read = reads.flatMap((r, i) => {
    const m = q.metrics[r.metric];
    return values[i].nullable || m.needs.size > 0 || m.percentiles.size > 0 ? [i] : [];
  });
  // Text groups met often come as their place in `dictionary` (a number: cheaper to write, read
  // and look up than the text).
  const group = groupExpr(q.group!, sqliteSql);
  const coded = dictionary.length
    ? sql`case ${group} ${sql.join(
        dictionary.map((v, k) => sql`when ${v} then ${sql.lit(k)}`),
        sql` `,
      )} else ${group} end`
    : group;
  const columns = [...(o.bucket ? [bucketExpr(q, true)] : []), coded, ...read.map((i) => values[i].expr)];
  const select = sql.join(columns.map((c) => sql`json_group_array(${c})`));
  return { query: sql`select ${select} from records where ${cellWhere(q, o, sqliteSql, candidates)}`, read };
}
