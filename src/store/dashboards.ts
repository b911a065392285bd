import { Worker } from 'node:worker_threads';
import { type Kysely, type RawBuilder, sql } from 'kysely';
import {
  type AggregateSpec,
  GroupScan,
  type GroupValues,
  aggregateCells,
  numbers,
  percentileTotals,
} from '../domain/cell-aggregates.ts';
import {
  CellCollector,
  type CellColumns,
  type CellRow,
  groupCounts,
  rankGroups,
  rowsOf,
} from '../domain/cell-columns.ts';
import { sqlitePercentileFraction } from '../domain/dashboards.ts';
import { type TextCandidates, candidateOptions, compileFilterTree } from '../query/compile.ts';
import type { ColumnDef } from '../query/columns.ts';
import type { FilterTree, Leaf } from '../query/filters.ts';
import type { Dialect, Store } from './db.ts';
import type { DB, DashboardSectionsTable, DashboardWidgetsTable, DashboardsTable } from './tables.ts';

export type DashboardRow = DashboardsTable;
export type SectionRow = DashboardSectionsTable;
export type WidgetRow = DashboardWidgetsTable;

/** Raised when a second default dashboard for one log stream loses the race to the first. */
export class DefaultExists extends Error {}

/** Trends dashboards with their sections and widgets. */
export class DashboardsRepo {
  constructor(
    private readonly db: Kysely<DB>,
    private readonly dialect: Dialect,
  ) {}

  byId(logStreamId: string, id: string): Promise<DashboardRow | undefined> {
    return this.db
      .selectFrom('dashboards')
      .selectAll()
      .where('log_stream_id', '=', logStreamId)
      .where('id', '=', id)
      .executeTakeFirst();
  }

  defaultOf(logStreamId: string): Promise<DashboardRow | undefined> {
    return this.db
      .selectFrom('dashboards')
      .selectAll()
      .where('log_stream_id', '=', logStreamId)
      .where('is_default', '=', 1)
      .executeTakeFirst();
  }

  /** The dashboards of a log stream: the default first, then the others by creation. */
  list(logStreamId: string): Promise<DashboardRow[]> {
    return this.db
      .selectFrom('dashboards')
      .selectAll()
      .where('log_stream_id', '=', logStreamId)
      .orderBy('is_default', 'desc')
      .orderBy('created_at', 'asc')
      .orderBy('id', 'asc')
      .execute();
  }

  /** Inserts a dashboard; a default one that another request created first throws DefaultExists. */
  async insert(row: DashboardRow): Promise<void> {
    try {
      await this.db.insertInto('dashboards').values(row).execute();
    } catch (err) {
      if (row.is_default && (await this.defaultOf(row.log_stream_id))) throw new DefaultExists();
      throw err;
    }
  }

  async update(id: string, patch: Partial<Omit<DashboardRow, 'id' | 'project_id' | 'log_stream_id'>>) {
    await this.db.updateTable('dashboards').set(patch).where('id', '=', id).execute();
  }

  async delete(id: string): Promise<void> {
    await this.db.deleteFrom('dashboards').where('id', '=', id).execute();
  }

  sectionsOf(dashboardIds: string[]): Promise<SectionRow[]> {
    if (dashboardIds.length === 0) return Promise.resolve([]);
    return this.db
      .selectFrom('dashboard_sections')
      .selectAll()
      .where('dashboard_id', 'in', dashboardIds)
      .orderBy('position', 'asc')
      .execute();
  }

  widgetsOf(dashboardIds: string[]): Promise<WidgetRow[]> {
    if (dashboardIds.length === 0) return Promise.resolve([]);
    return this.db
      .selectFrom('dashboard_widgets')
      .selectAll()
      .where('dashboard_id', 'in', dashboardIds)
      .orderBy('position', 'asc')
      .execute();
  }

  section(dashboardId: string, id: string): Promise<SectionRow | undefined> {
    return this.db
      .selectFrom('dashboard_sections')
      .selectAll()
      .where('dashboard_id', '=', dashboardId)
      .where('id', '=', id)
      .executeTakeFirst();
  }

  widget(dashboardId: string, id: string): Promise<WidgetRow | undefined> {
    return this.db
      .selectFrom('dashboard_widgets')
      .selectAll()
      .where('dashboard_id', '=', dashboardId)
      .where('id', '=', id)
      .executeTakeFirst();
  }

  async countSections(dashboardId: string): Promise<number> {
    const r = await this.db
      .selectFrom('dashboard_sections')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('dashboard_id', '=', dashboardId)
      .executeTakeFirstOrThrow();
    return Number(r.n);
  }

  /** Widgets of a dashboard in one section, or outside every section when `sectionId` is null. */
  async countWidgets(dashboardId: string, sectionId: string | null): Promise<number> {
    let q = this.db
      .selectFrom('dashboard_widgets')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('dashboard_id', '=', dashboardId);
    q = sectionId === null ? q.where('section_id', 'is', null) : q.where('section_id', '=', sectionId);
    const r = await q.executeTakeFirstOrThrow();
    return Number(r.n);
  }

  /** The position after every widget or section of the dashboard (call under `locked`). */
  async nextPosition(
    table: 'dashboard_widgets' | 'dashboard_sections',
    dashboardId: string,
  ): Promise<number> {
    const r = await this.db
      .selectFrom(table)
      .select((eb) => eb.fn.max('position').as('p'))
      .where('dashboard_id', '=', dashboardId)
      .executeTakeFirst();
    return r?.p === null || r?.p === undefined ? 0 : Number(r.p) + 1;
  }

  async insertSection(row: SectionRow): Promise<void> {
    await this.db.insertInto('dashboard_sections').values(row).execute();
  }

  async updateSection(id: string, patch: Partial<Omit<SectionRow, 'id' | 'dashboard_id'>>): Promise<void> {
    await this.db.updateTable('dashboard_sections').set(patch).where('id', '=', id).execute();
  }

  /** Deletes a section and (by cascade) its widgets. */
  async deleteSection(id: string): Promise<void> {
    await this.db.deleteFrom('dashboard_widgets').where('section_id', '=', id).execute();
    await this.db.deleteFrom('dashboard_sections').where('id', '=', id).execute();
  }

  async insertWidget(row: WidgetRow): Promise<void> {
    await this.db.insertInto('dashboard_widgets').values(row).execute();
  }

  async updateWidget(id: string, patch: Partial<Omit<WidgetRow, 'id' | 'dashboard_id'>>): Promise<void> {
    await this.db.updateTable('dashboard_widgets').set(patch).where('id', '=', id).execute();
  }

  async deleteWidget(id: string): Promise<void> {
    await this.db.deleteFrom('dashboard_widgets').where('id', '=', id).execute();
  }

  /**
   * Runs `fn` in a transaction that holds the dashboard's row lock (PostgreSQL; SQLite transactions
   * are serial), so that counting widgets or sections and then adding one cannot exceed a limit
   * under concurrent requests.
   */
  locked<T>(dashboardId: string, fn: (repo: DashboardsRepo) => Promise<T>): Promise<T> {
    return this.db.transaction().execute(async (tx) => {
      if (this.dialect === 'postgres') {
        await tx.selectFrom('dashboards').select('id').where('id', '=', dashboardId).forUpdate().execute();
      }
      return fn(new DashboardsRepo(tx, this.dialect));
    });
  }
}

/** One metric the widgets aggregate: a column read as a number or as a boolean (1/0). */
export interface MetricSpec {
  /** Prefix of this metric's aggregate columns in a cell (`m0_n`, `m0_sum`, ...). */
  key: string;
  column: ColumnDef;
  kind: 'number' | 'boolean' | 'any';
  /** Which aggregates the widgets need besides the count of present values. */
  needs: Set<'sum' | 'min' | 'max' | 'true'>;
  /** Percentiles (50, 90, 95, 99) the widgets need. */
  percentiles: Set<number>;
  /**
   * Percentiles also wanted over the whole range per group (the `total` of number and table widgets).
   * Unlike counts and sums they cannot be merged from the buckets: they take one more pass.
   */
  totalPercentiles: Set<number>;
}

export interface CellQuery {
  runId: string;
  /** Range [startUs, endUs) of created_at. */
  startUs: number;
  endUs: number;
  /** Start of bucket 0 and the bucket size. */
  firstUs: number;
  sizeUs: number;
  buckets: number;
  tree: FilterTree | null;
  group: ColumnDef | null;
  metrics: MetricSpec[];
  /** SQLite: trigram candidates for `contains` leaves (store/search.ts), looked up on the same connection. */
  textCandidates?: (db: Kysely<DB>, tree: FilterTree | null) => Promise<ReadonlyMap<Leaf, readonly number[]>>;
  /**
   * PostgreSQL: candidate ids for `contains` leaves from the text index and its queue (store/search.ts
   * pgTextCandidates), looked up in the statements' snapshot.
   */
  pgTextCandidates?: (
    db: Kysely<DB>,
    tree: FilterTree | null,
  ) => Promise<ReadonlyMap<Leaf, readonly string[]>>;
}

/** Scalar columns of `records` that are never NULL. */
const NOT_NULL = new Set(['id', 'type', 'name', 'created_at', 'updated_at', 'is_complete', 'num_children']);

/**
 * The value of a column as a number, a boolean (1/0) or text, SQL NULL when the record lacks it or
 * holds another JSON type. This is the same SQL as the filter compiler's (query/compile.ts) value
 * reader, so that a metric and a filter on one column read the same values.
 */
export function valueExpr(
  column: ColumnDef,
  want: 'text' | 'number' | 'boolean' | 'any',
  dialect: Dialect,
): { expr: RawBuilder<unknown>; nullable: boolean } {
  const src = column.source;
  if (src.kind === 'scalar')
    return { expr: sql.ref(`records.${src.column}`), nullable: !NOT_NULL.has(src.column) };
  if (src.kind === 'tags') throw new Error('tags have no scalar value');
  const col = sql.ref(`records.${src.column}`);
  // 'any': 1 when the key holds a value of any JSON type but null (for Count).
  if (dialect === 'postgres') {
    const k = sql`${src.key}::text`;
    if (want === 'any')
      return { expr: sql`(case when jsonb_typeof(${col} -> ${k}) <> 'null' then 1 end)`, nullable: true };
    if (want === 'text')
      return {
        expr: sql`(case when jsonb_typeof(${col} -> ${k}) = 'string' then ${col} ->> ${k} end)`,
        nullable: true,
      };
    if (want === 'number')
      return {
        expr: sql`(case when jsonb_typeof(${col} -> ${k}) = 'number' then (${col} ->> ${k})::numeric end)`,
        nullable: true,
      };
    return {
      expr: sql`(case ${col} -> ${k} when 'true'::jsonb then 1 when 'false'::jsonb then 0 end)`,
      nullable: true,
    };
  }
  const p = `$.${JSON.stringify(src.key)}`;
  if (want === 'any')
    return { expr: sql`(case when json_type(${col}, ${p}) <> 'null' then 1 end)`, nullable: true };
  if (want === 'text')
    return {
      expr: sql`(case json_type(${col}, ${p}) when 'text' then json_extract(${col}, ${p}) end)`,
      nullable: true,
    };
  if (want === 'number')
    return {
      expr: sql`(case when json_type(${col}, ${p}) in ('integer', 'real') then json_extract(${col}, ${p}) end)`,
      nullable: true,
    };
  return {
    expr: sql`(case json_type(${col}, ${p}) when 'true' then 1 when 'false' then 0 end)`,
    nullable: true,
  };
}

/** How a group_by column is read: metadata keys by their string values, other columns as they are. */
function groupExpr(column: ColumnDef, dialect: Dialect): RawBuilder<unknown> {
  const src = column.source;
  if (src.kind === 'json')
    return valueExpr(column, src.column === 'metrics' ? 'number' : 'text', dialect).expr;
  return valueExpr(column, 'text', dialect).expr;
}

/** The bucket of a record, or -1 where a statement covers a single bucket or the whole range. */
function bucketExpr(q: CellQuery, bucket: boolean): RawBuilder<unknown> {
  const big = (v: number) => sql`cast(${v} as bigint)`;
  return bucket ? sql`(records.created_at - ${big(q.firstUs)}) / ${big(q.sizeUs)}` : sql`-1`;
}

/**
 * The aggregate columns of a cell, in order: the record count `n`, then per metric `<key>_n` and
 * what its widgets need; only the whole-range percentiles for `percentilesOnly`.
 */
export function aggregateSpecs(metrics: readonly MetricSpec[], percentilesOnly: boolean): AggregateSpec[] {
  const specs: AggregateSpec[] = [];
  if (!percentilesOnly) specs.push({ name: 'n', op: 'n', metric: -1 });
  metrics.forEach((m, metric) => {
    if (!percentilesOnly) {
      specs.push({ name: `${m.key}_n`, op: 'count', metric });
      for (const op of ['sum', 'min', 'max', 'true'] as const)
        if (m.needs.has(op)) specs.push({ name: `${m.key}_${op}`, op, metric });
    }
    for (const percent of percentilesOnly ? m.totalPercentiles : m.percentiles)
      specs.push({ name: `${m.key}_p${percent}`, op: 'percentile', metric, percent });
  });
  return specs;
}

/** Parameters that mark the range bounds in a statement compiled once and run per chunk. */
const LOW_MARK = -1.234567e300;
const HIGH_MARK = -2.345678e300;

/** At most this many text group values read as numbers (see valuesStatement). */
const DICTIONARY_SIZE = 32;

/** At most this many statements per query on SQLite (each covers whole buckets). */
const MAX_CHUNKS = 400;

/**
 * The widget aggregates per bucket and group over a log stream's records, in SQL on both stores:
 * percentiles by SQLite's percentile_disc and by an ordered array on PostgreSQL, with the same
 * definition (domain/dashboards.ts).
 *
 * SQLite has no hash aggregation: GROUP BY sorts every matching row. One statement per bucket (or
 * per run of buckets, at most MAX_CHUNKS statements) keeps each sort small, and the
 * (run_id, created_at) index reads each bucket's rows as one range; that measured faster than one
 * statement over the whole range. PostgreSQL answers in one statement.
 */
export class DashboardDataRepo {
  private readonly readers: DashboardReaders | null;

  /** `readers`: SQLite reader threads for widget data (default 2; 0 answers on the main connection). */
  constructor(
    private readonly store: Store,
    opts: { readers?: number } = {},
  ) {
    const file = store.sqlite?.name;
    const readers = opts.readers ?? 2;
    this.readers = readers > 0 && file && !store.sqlite?.memory ? new DashboardReaders(file, readers) : null;
  }

  private get pg(): boolean {
    return this.store.dialect === 'postgres';
  }

  /**
   * SELECT <bucket>, <group>, <aggregates> FROM records WHERE <run, range, filter>
   * GROUP BY <bucket?>, <group>; `aggregates` names the columns after the first two.
   */
  private statement(
    q: CellQuery,
    o: { bucket: boolean; percentilesOnly: boolean; low: number; high: number },
    candidates?: TextCandidates,
  ) {
    const dialect = this.store.dialect;
    const specs = aggregateSpecs(q.metrics, o.percentilesOnly);
    const values = q.metrics.map((m) => valueExpr(m.column, m.kind, dialect));
    const parts = [bucketExpr(q, o.bucket), q.group ? groupExpr(q.group, dialect) : sql`null`];
    for (const spec of specs) {
      const v = values[spec.metric];
      const x = v?.expr;
      switch (spec.op) {
        case 'n':
          parts.push(sql`count(*)`);
          break;
        case 'count':
          parts.push(v.nullable ? sql`count(${x})` : sql`count(*)`);
          break;
        case 'sum':
          // SQLite's total() is sum() without integer overflow; PostgreSQL's sum() is exact.
          parts.push(this.pg ? sql`sum(${x})` : sql`total(${x})`);
          break;
        case 'min':
          parts.push(sql`min(${x})`);
          break;
        case 'max':
          parts.push(sql`max(${x})`);
          break;
        case 'true':
          parts.push(sql`sum(case when ${x} = 1 then 1 else 0 end)`);
          break;
        case 'percentile':
          parts.push(
            this.pg
              ? sql`(array_agg(${x} order by ${x}) filter (where ${x} is not null))[((${sql.lit(spec.percent!)} * (count(${x}) - 1)) / 100 + 1)::int]`
              : sql`percentile_disc(${x}, ${sqlitePercentileFraction(spec.percent!)})`,
          );
          break;
      }
    }
    const names = ['b', 'g', ...specs.map((a) => a.name)];
    const select = sql.join(parts.map((e, i) => sql`${e} as ${sql.id(names[i])}`));
    const from = sql`select ${select} from records where ${this.where(q, o, candidates)}`;
    const aggregates = names.slice(2);
    // Without a bucket column the statement covers one bucket (or none): it groups by the group alone,
    // and without a group it needs no GROUP BY (so no sort) at all.
    if (o.bucket) return { query: sql<CellRow>`${from} group by 1, 2`, aggregates };
    return { query: q.group ? sql<CellRow>`${from} group by 2` : sql<CellRow>`${from}`, aggregates };
  }

  /**
   * SQLite, for grouped cells: one row of JSON arrays (bucket when `bucket`, group, and the values
   * of the metrics in `read`) over the matching records, grouped in JavaScript
   * (domain/cell-aggregates.ts). A metric that is never NULL and only counted needs no values.
   */
  private valuesStatement(
    q: CellQuery,
    o: { bucket: boolean; low: number; high: number },
    candidates?: ReadonlyMap<Leaf, readonly number[]>,
    dictionary: readonly string[] = [],
  ) {
    const dialect = this.store.dialect;
    const values = q.metrics.map((m) => valueExpr(m.column, m.kind, dialect));
    const read = q.metrics.flatMap((m, i) =>
      values[i].nullable || m.needs.size > 0 || m.percentiles.size > 0 ? [i] : [],
    );
    // Text groups met often come as their place in `dictionary` (a number: cheaper to write, read
    // and look up than the text).
    const group = groupExpr(q.group!, dialect);
    const coded = dictionary.length
      ? sql`case ${group} ${sql.join(
          dictionary.map((v, k) => sql`when ${v} then ${sql.lit(k)}`),
          sql` `,
        )} else ${group} end`
      : group;
    const columns = [...(o.bucket ? [bucketExpr(q, true)] : []), coded, ...read.map((i) => values[i].expr)];
    const select = sql.join(columns.map((c) => sql`json_group_array(${c})`));
    return { query: sql`select ${select} from records where ${this.where(q, o, candidates)}`, read };
  }

  /** `candidates`: rowids (SQLite) or ids (PostgreSQL) of the records a `contains` leaf may match. */
  private where(q: CellQuery, o: { low: number; high: number }, candidates?: TextCandidates) {
    const where = [
      sql`records.run_id = ${q.runId}`,
      sql`records.created_at >= ${o.low}`,
      sql`records.created_at < ${o.high}`,
    ];
    if (q.tree)
      where.push(sql`${compileFilterTree(q.tree, candidateOptions(this.store.dialect, candidates))}`);
    return sql.join(where, sql` and `);
  }

  /**
   * The cells of the groups shown (at most `groupLimit` with a group column, by records over the
   * whole range, most first) and, for the percentiles in `totalPercentiles` (which cannot be merged
   * from buckets), their values per group over the whole range.
   */
  async cells(q: CellQuery, groupLimit: number): Promise<WidgetCells> {
    const needTotals = q.metrics.some((m) => m.totalPercentiles.size > 0);
    const shownOf = (counts: Map<unknown, number>) => {
      const ranked = rankGroups(counts, q.group ? groupLimit : 1);
      return { shown: q.group ? ranked.shown : [null], groupCount: ranked.count };
    };
    const finish = (parts: CellColumns[], totals: CellColumns | null): WidgetCells => {
      const { shown, groupCount } = shownOf(groupCounts(parts));
      return {
        shown,
        groupCount,
        cells: rowsOf(parts, shown),
        percentileTotals: totals ? rowsOf([totals], shown) : null,
      };
    };
    if (this.pg) {
      // One snapshot for the text candidates and the statements: a record is either queued for the
      // text index or indexed as it is (store/search-text-pg.ts).
      return this.store.db
        .transaction()
        .setIsolationLevel('repeatable read')
        .setAccessMode('read only')
        .execute(async (trx) => {
          const candidates = q.pgTextCandidates ? await q.pgTextCandidates(trx, q.tree) : undefined;
          const whole = { low: q.startUs, high: q.endUs };
          const run = async (o: { bucket: boolean; percentilesOnly: boolean }) => {
            const { query, aggregates } = this.statement(q, { ...o, ...whole }, candidates);
            const out = new CellCollector(aggregates);
            const names = ['b', 'g', ...aggregates];
            for (const row of (await query.execute(trx)).rows)
              out.add(names.map((k) => (row as Record<string, unknown>)[k]));
            return out.done();
          };
          const cells = await run({ bucket: true, percentilesOnly: false });
          return finish([cells], needTotals ? await run({ bucket: false, percentilesOnly: true }) : null);
        });
    }
    if (!this.readers) {
      const here = await this.cellsHere(q, { from: 0, to: q.buckets, totals: needTotals });
      return finish([here.cells], here.percentileTotals);
    }
    // SQLite with reader threads: the buckets split between them (and the totals pass on its own),
    // off the main thread where requests and ingestion run.
    const { textCandidates: _, pgTextCandidates: __, ...job } = q;
    const parts = Math.min(this.readers.size, q.buckets);
    const split = Array.from({ length: parts }, (_, k) => ({
      from: Math.floor((k * q.buckets) / parts),
      to: Math.floor(((k + 1) * q.buckets) / parts),
    }));
    if (!q.group) {
      const totals = needTotals ? this.readers.run({ q: job, from: 0, to: 0, totals: true }) : null;
      const done = await Promise.all(split.map((p) => this.readers!.run({ q: job, ...p, totals: false })));
      return finish(
        done.map((d) => d.cells),
        totals ? (await totals).percentileTotals : null,
      );
    }
    // Grouped: each thread counts its records per group and keeps them; the groups are ranked over
    // every thread's counts; then each thread computes the cells of the shown groups only, and hands
    // over their values of the metrics whose whole-range percentiles are wanted.
    const scans = await this.readers.scan(split.map((p) => ({ q: job, ...p, totals: false })));
    const counts = new Map<unknown, number>();
    for (const s of scans)
      s.groups.forEach((value, i) => {
        counts.set(value, (counts.get(value) ?? 0) + s.counts[i]);
      });
    const { shown, groupCount } = shownOf(counts);
    const totalMetrics = q.metrics.flatMap((m, i) => (m.totalPercentiles.size > 0 ? [i] : []));
    const taken = await Promise.all(scans.map((s) => s.take(shown, totalMetrics)));
    return {
      shown,
      groupCount,
      cells: rowsOf(
        taken.map((t) => t.cells),
        shown,
      ),
      percentileTotals: needTotals
        ? (percentileTotals(
            aggregateSpecs(q.metrics, true),
            shown,
            taken.map((t) => t.values),
          ) as CellRow[])
        : null,
    };
  }

  /**
   * SQLite, on this connection: the grouped records of buckets [from, to), counted per group and
   * kept for `GroupScan.cells` (one read transaction, one snapshot).
   */
  scanHere(q: CellQuery, part: { from: number; to: number }): Promise<GroupScan> {
    const scan = new GroupScan();
    return this.cellsHere(q, { ...part, totals: false }, scan).then(() => scan);
  }

  /**
   * SQLite, on this connection: the cells of buckets [from, to), and the percentile totals when asked,
   * in one read transaction (one snapshot).
   */
  cellsHere(
    q: CellQuery,
    part: { from: number; to: number; totals: boolean },
    scan?: GroupScan,
  ): Promise<ThreadCells> {
    return this.store.db.connection().execute(async (conn) => {
      const candidates = q.textCandidates ? await q.textCandidates(conn, q.tree) : undefined;
      const raw = this.store.sqlite!;
      const perChunk = Math.max(1, Math.ceil(q.buckets / MAX_CHUNKS));
      // One bucket per statement (the usual case): the bucket is known, not computed per row.
      const single = perChunk === 1;
      const range = { low: LOW_MARK, high: HIGH_MARK };
      const specs = aggregateSpecs(q.metrics, false);
      // Grouped cells: the values as JSON arrays, grouped here without SQLite's sort; otherwise the
      // aggregates in SQL (one row per statement, no GROUP BY).
      const grouped = q.group !== null;
      const byValues = grouped ? this.valuesStatement(q, { bucket: !single, ...range }, candidates) : null;
      const query =
        byValues?.query ??
        this.statement(q, { bucket: !single, percentilesOnly: false, ...range }, candidates).query;
      const cells = new CellCollector(specs.map((a) => a.name));
      let totals: CellColumns | null = null;
      raw.exec('begin');
      try {
        if (part.to > part.from) {
          const prepare = (built: typeof query) => {
            const compiled = built.compile(conn);
            return {
              stmt: raw.prepare(compiled.sql).raw(true),
              params: [...compiled.parameters],
              lowAt: compiled.parameters.indexOf(LOW_MARK),
              highAt: compiled.parameters.indexOf(HIGH_MARK),
            };
          };
          let { stmt, params, lowAt, highAt } = prepare(query);
          // A text group_by: after the first read, the values met often are read as numbers.
          let coding = scan !== undefined && q.group?.dataType === 'text';
          for (let i = part.from; i < part.to; i += perChunk) {
            params[lowAt] = Math.max(q.startUs, q.firstUs + i * q.sizeUs);
            params[highAt] = Math.min(q.endUs, q.firstUs + Math.min(i + perChunk, part.to) * q.sizeUs);
            if (byValues) {
              const arrays = (stmt.get(params) as string[]).map((a) => JSON.parse(a) as (number | null)[]);
              const bucket = single ? i : (arrays.shift() as number[]);
              const groups = arrays.shift()!;
              const metrics = q.metrics.map((_, m) => {
                const at = byValues.read.indexOf(m);
                return at < 0 ? null : numbers(arrays[at]);
              });
              if (scan) scan.add({ bucket, groups, metrics });
              else cells.addColumns(aggregateCells(specs, { bucket, groups, metrics }));
              if (coding && scan && groups.length > 0) {
                coding = false;
                const dictionary = scan.frequent(DICTIONARY_SIZE, Math.max(2, groups.length / 200));
                if (dictionary.length) {
                  scan.useCodes(dictionary);
                  const coded = this.valuesStatement(
                    q,
                    { bucket: !single, ...range },
                    candidates,
                    dictionary,
                  );
                  ({ stmt, params, lowAt, highAt } = prepare(coded.query));
                }
              }
              continue;
            }
            for (const row of stmt.all(params) as unknown[][]) {
              if (!single) cells.add(row);
              // An aggregate without GROUP BY answers one row even for no records (`n`, the third
              // column, is 0).
              else if ((row[2] as number) > 0) cells.add(row, i);
            }
          }
        }
        if (part.totals) {
          const whole = { low: q.startUs, high: q.endUs };
          const t = this.statement(q, { bucket: false, percentilesOnly: true, ...whole }, candidates);
          const compiled = t.query.compile(conn);
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

  /** Stops the reader threads. */
  async close(): Promise<void> {
    await this.readers?.close();
  }
}

/**
 * Widget data: the groups shown (`[null]` without a group column) and how many there are, their
 * cells, and their whole-range percentile totals (null when no widget needs them).
 */
export interface WidgetCells {
  shown: unknown[];
  groupCount: number;
  cells: CellRow[];
  percentileTotals: CellRow[] | null;
}

/** What one thread computed: cells of some buckets, and the percentile totals when asked. */
export interface ThreadCells {
  cells: CellColumns;
  percentileTotals: CellColumns | null;
}

/** One piece of a query for a reader thread: the query without its callback, and which buckets. */
export interface CellJob {
  q: Omit<CellQuery, 'textCandidates' | 'pgTextCandidates'>;
  from: number;
  to: number;
  totals: boolean;
}

/** The code that starts a reader thread: under tsx (TypeScript sources) it registers tsx first. */
function readerBootstrap(): { code: string; eval: true } | { url: URL } {
  const ts = import.meta.url.endsWith('.ts');
  const url = new URL(ts ? './dashboards-worker.ts' : './dashboards-worker.js', import.meta.url);
  if (!ts) return { url };
  const tsx = import.meta.resolve('tsx/esm/api');
  return {
    eval: true,
    code: `import(${JSON.stringify(tsx)}).then((m) => { m.register(); return import(${JSON.stringify(url.href)}); })`,
  };
}

interface Reader {
  worker: Worker;
  jobs: Map<number, { resolve: (r: any) => void; reject: (e: Error) => void }>;
}

/**
 * What the main thread asks of a reader thread (dashboards-worker.ts): the cells of some buckets;
 * a grouped scan of some buckets, kept under `id`, answered with its group counts; the cells of the
 * shown groups from a kept scan (which it then drops); or to drop a kept scan.
 */
export type ReaderRequest =
  | { id: number; kind: 'cells'; job: CellJob }
  | { id: number; kind: 'scan'; job: CellJob }
  | { id: number; kind: 'take'; scan: number; shown: unknown[]; totalMetrics: number[] }
  | { id: number; kind: 'drop'; scan: number };

/**
 * A grouped scan kept by a reader thread: its group counts, and the way to its shown groups' cells
 * and values of the metrics in `totalMetrics`.
 */
export interface KeptScan {
  groups: unknown[];
  counts: Float64Array;
  take(shown: unknown[], totalMetrics: number[]): Promise<TakenCells>;
}

/** The cells of the shown groups from a kept scan, and their values of some metrics. */
export interface TakenCells {
  cells: CellColumns;
  values: GroupValues[];
}

/**
 * SQLite reader threads for widget data (dashboards-worker.ts), each with its own WAL connection,
 * started on first use; an idle one does not keep the process alive.
 */
class DashboardReaders {
  private readers: Reader[] = [];
  private nextId = 1;
  private closed = false;

  constructor(
    private readonly file: string,
    readonly size: number,
  ) {}

  private spawn(): Reader {
    const boot = readerBootstrap();
    const workerData = { file: this.file };
    const worker =
      'code' in boot
        ? new Worker(boot.code, { eval: true, workerData })
        : new Worker(boot.url, { workerData });
    const reader: Reader = { worker, jobs: new Map() };
    worker.on(
      'message',
      (msg: { id: number; result?: unknown; error?: { message: string; code?: string } }) => {
        const job = reader.jobs.get(msg.id);
        if (!job) return;
        reader.jobs.delete(msg.id);
        if (reader.jobs.size === 0) worker.unref();
        if (msg.error) job.reject(Object.assign(new Error(msg.error.message), { code: msg.error.code }));
        else job.resolve(msg.result!);
      },
    );
    const fail = (err: Error) => {
      this.readers = this.readers.filter((r) => r !== reader);
      for (const job of reader.jobs.values()) job.reject(err);
      reader.jobs.clear();
    };
    worker.on('error', fail);
    worker.on('exit', (code) => fail(new Error(`dashboard reader exited (${code})`)));
    worker.unref();
    this.readers.push(reader);
    return reader;
  }

  /** The least busy reader, started if there are fewer than `size`. */
  private pick(): Reader {
    if (this.closed) throw new Error('dashboard readers are closed');
    let reader = this.readers.find((r) => r.jobs.size === 0);
    if (!reader && this.readers.length < this.size) reader = this.spawn();
    return reader ?? this.readers.reduce((a, b) => (b.jobs.size < a.jobs.size ? b : a));
  }

  private ask<T>(reader: Reader, request: ReaderRequest): Promise<T> {
    return new Promise((resolve, reject) => {
      reader.jobs.set(request.id, { resolve, reject });
      reader.worker.ref();
      reader.worker.postMessage(request);
    });
  }

  async run(job: CellJob): Promise<ThreadCells> {
    return this.ask(this.pick(), { id: this.nextId++, kind: 'cells', job });
  }

  /**
   * Grouped scans, one per job, each kept by the thread that ran it until its cells are taken. If
   * any scan fails, the others are dropped and the failure is thrown.
   */
  async scan(jobs: CellJob[]): Promise<KeptScan[]> {
    const started = jobs.map((job) => {
      const reader = this.pick();
      const id = this.nextId++;
      // Picked readers count as busy from here, so the next job goes to another one.
      const answer = this.ask<{ groups: unknown[]; counts: Float64Array }>(reader, { id, kind: 'scan', job });
      return { reader, id, answer };
    });
    const settled = await Promise.allSettled(started.map((s) => s.answer));
    const failed = settled.find((r) => r.status === 'rejected');
    if (failed) {
      started.forEach((s, k) => {
        if (settled[k].status === 'fulfilled')
          void this.ask(s.reader, { id: this.nextId++, kind: 'drop', scan: s.id }).catch(() => {});
      });
      throw (failed as PromiseRejectedResult).reason;
    }
    return started.map((s, k) => {
      const { groups, counts } = (
        settled[k] as PromiseFulfilledResult<{ groups: unknown[]; counts: Float64Array }>
      ).value;
      return {
        groups,
        counts,
        take: (shown: unknown[], totalMetrics: number[]) =>
          this.ask<TakenCells>(s.reader, {
            id: this.nextId++,
            kind: 'take',
            scan: s.id,
            shown,
            totalMetrics,
          }),
      };
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    const all = this.readers;
    this.readers = [];
    await Promise.all(all.map((r) => r.worker.terminate()));
  }
}
