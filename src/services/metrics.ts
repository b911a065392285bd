/**
 * The process's Prometheus metrics (prom-client), in a registry of its own per app (tests run several
 * apps in one process): HTTP requests by route and status with latency, records ingested and deleted
 * by kind, the text-index backlog, the rollup days waiting to be built, retention progress, database pool use, and Node's own process
 * metrics (event-loop delay, memory, CPU, handles).
 */
import client from 'prom-client';
import type { Plan } from '../domain/ingest-plan.ts';
import type { Store } from '../store/db.ts';
import type { IngestStore } from '../store/ingest.ts';
import type { Leases } from '../store/leases.ts';

export class Metrics {
  readonly registry = new client.Registry();
  readonly httpRequests: client.Histogram<'method' | 'route' | 'status'>;
  readonly recordsIngested: client.Counter<'kind'>;
  readonly recordsDeleted: client.Counter<'reason'>;
  readonly rootsDeleted: client.Counter<'reason' | 'kind'>;
  readonly deleteBatches: client.Counter<'reason'>;
  readonly retentionPasses: client.Counter<'outcome'>;
  readonly retentionLastPass: client.Gauge;

  constructor(
    store: Store,
    backlogs: { text: () => Promise<number>; rollupDays: () => Promise<number> },
    leases: Leases,
    jobs: readonly string[],
  ) {
    const registers = [this.registry];
    client.collectDefaultMetrics({ register: this.registry, prefix: 'spanbase_' });
    this.httpRequests = new client.Histogram({
      name: 'spanbase_http_request_duration_seconds',
      help: 'HTTP requests by route (its pattern) and status, with their latency',
      labelNames: ['method', 'route', 'status'],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers,
    });
    this.recordsIngested = new client.Counter({
      name: 'spanbase_records_ingested_total',
      help: 'Records written for the first time, by kind (session, trace, span)',
      labelNames: ['kind'],
      registers,
    });
    this.recordsDeleted = new client.Counter({
      name: 'spanbase_records_deleted_total',
      help: 'Records deleted, with those below the named ones, by reason (request, retention)',
      labelNames: ['reason'],
      registers,
    });
    this.rootsDeleted = new client.Counter({
      name: 'spanbase_delete_roots_total',
      help: 'Sessions, traces or spans a delete named, by reason and kind',
      labelNames: ['reason', 'kind'],
      registers,
    });
    this.deleteBatches = new client.Counter({
      name: 'spanbase_delete_batches_total',
      help: 'Delete transactions committed, by reason',
      labelNames: ['reason'],
      registers,
    });
    this.retentionPasses = new client.Counter({
      name: 'spanbase_retention_passes_total',
      help: 'Passes of the retention job in this process, by outcome (done, not_leader, failed, stopped)',
      labelNames: ['outcome'],
      registers,
    });
    this.retentionLastPass = new client.Gauge({
      name: 'spanbase_retention_last_pass_timestamp_seconds',
      help: 'When this process last finished a retention pass',
      registers,
    });
    new client.Gauge({
      name: 'spanbase_lease_held',
      help: 'Background jobs whose lease this process holds (1) or not (0)',
      labelNames: ['job'],
      registers,
      collect() {
        for (const job of jobs) this.set({ job }, leases.holds(job) ? 1 : 0);
      },
    });
    new client.Gauge({
      name: 'spanbase_text_index_backlog',
      help: 'Records waiting to be written to the text index',
      registers,
      async collect() {
        this.set(await backlogs.text().catch(() => Number.NaN));
      },
    });
    new client.Gauge({
      name: 'spanbase_rollup_days_unbuilt',
      help: "Days whose dashboard rollup rows wait to be built (their dashboards read the days' hours meanwhile)",
      registers,
      async collect() {
        this.set(await backlogs.rollupDays().catch(() => Number.NaN));
      },
    });
    const pool = store.pool;
    if (pool) {
      const gauge = (name: string, help: string, read: () => number) =>
        new client.Gauge({
          name,
          help,
          registers,
          collect() {
            this.set(read());
          },
        });
      gauge('spanbase_db_pool_connections', 'PostgreSQL connections open in the pool', () => pool.totalCount);
      gauge('spanbase_db_pool_idle', 'PostgreSQL connections idle in the pool', () => pool.idleCount);
      gauge(
        'spanbase_db_pool_waiting',
        'Queries waiting for a PostgreSQL connection',
        () => pool.waitingCount,
      );
    }
  }

  /** Counts what each ingest plan inserts. */
  countIngest(inner: IngestStore): IngestStore {
    const counter = this.recordsIngested;
    const count = (plan: Plan | null) => {
      if (!plan) return;
      let sessions = 0;
      let traces = 0;
      for (const r of plan.inserts) {
        if (r.type === 'session') sessions++;
        else if (r.type === 'trace') traces++;
      }
      if (sessions) counter.inc({ kind: 'session' }, sessions);
      if (traces) counter.inc({ kind: 'trace' }, traces);
      const spans = plan.inserts.length - sessions - traces;
      if (spans) counter.inc({ kind: 'span' }, spans);
    };
    return {
      run: async (flow, records) => {
        const res = await inner.run(flow, records);
        count(res.plan);
        return res;
      },
      insertRaw: (rows) => inner.insertRaw(rows),
      close: () => inner.close(),
    };
  }
}
