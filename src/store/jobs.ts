/**
 * The job table (migration 023): THE durable queue of background work on both stores.
 *
 * - Enqueueing is idempotent by (kind, key): a second enqueue of a key is a no-op (or, with `reset`,
 *   puts a finished job back to pending: a re-score).
 * - A claim takes due jobs with a lease (`lease_owner`, `lease_until`) and counts an attempt. A job
 *   whose lease lapsed (its worker died or stalled) is due again, so no job is lost to a crash.
 * - Every later write names its owner: a worker that lost its lease cannot finish a job another
 *   worker now holds.
 * - Claims are fair across projects: each claim takes at most an equal share from each project with
 *   due jobs, oldest first, so one busy project cannot starve the others.
 *
 * PostgreSQL claims with `FOR UPDATE SKIP LOCKED` (any number of processes claim at once, never the
 * same row); SQLite claims with one `UPDATE ... RETURNING` statement on its single writer, which
 * serialises claims by itself.
 */
import { type Kysely, sql } from 'kysely';
import { newId } from '../domain/ids.ts';
import type { Dialect } from '../query/sql-dialect.ts';
import { parseJson, toJson } from './db.ts';
import type { DB, JobsTable } from './tables.ts';

export type JobStatus = 'pending' | 'running' | 'done' | 'failed' | 'cancelled';

export interface NewJob {
  kind: string;
  key: string;
  projectId: string | null;
  runId: string | null;
  payload: unknown;
  maxAttempts: number;
  /** Epoch ms before which it is not claimed (default: now). */
  notBefore?: number;
}

export interface Job {
  id: string;
  kind: string;
  key: string;
  projectId: string | null;
  runId: string | null;
  payload: unknown;
  status: JobStatus;
  /** Attempts so far, this one included for a claimed job. */
  attempts: number;
  maxAttempts: number;
  reason: string | null;
  result: unknown;
}

/** Epoch ms → the table's microseconds. */
const us = (ms: number) => Math.round(ms * 1000);

function toJob(r: Record<string, any>): Job {
  return {
    id: r.id,
    kind: r.kind,
    key: r.key,
    projectId: r.project_id,
    runId: r.run_id,
    payload: parseJson(r.payload),
    status: r.status,
    attempts: Number(r.attempts),
    maxAttempts: Number(r.max_attempts),
    reason: r.reason,
    result: parseJson(r.result),
  };
}

/** A new job's row (`now` in epoch ms); ingestion writes score tasks' rows with its records. */
export function jobRow(j: NewJob, now: number): JobsTable {
  return {
    id: newId(),
    kind: j.kind,
    key: j.key,
    project_id: j.projectId,
    run_id: j.runId,
    payload: toJson(j.payload) as string,
    status: 'pending',
    attempts: 0,
    max_attempts: j.maxAttempts,
    next_attempt_at: us(j.notBefore ?? now),
    lease_owner: null,
    lease_until: null,
    reason: null,
    result: null,
    created_at: us(now),
    updated_at: us(now),
    finished_at: null,
  };
}

export class JobsRepo {
  constructor(
    private readonly db: Kysely<DB>,
    private readonly dialect: Dialect,
  ) {}

  /**
   * Adds jobs; a (kind, key) already there is left as it is, or with `reset` put back to pending with
   * the new payload and no attempts unless it is running now. Answers how many were added or reset.
   */
  async enqueue(jobs: NewJob[], opts: { reset?: boolean } = {}): Promise<number> {
    if (!jobs.length) return 0;
    const now = Date.now();
    let n = 0;
    for (let i = 0; i < jobs.length; i += 500) {
      const rows = jobs.slice(i, i + 500).map((j) => jobRow(j, now));
      const res = await this.db
        .insertInto('jobs')
        .values(rows)
        .onConflict((oc) => {
          const target = oc.columns(['kind', 'key']);
          if (!opts.reset) return target.doNothing();
          return target
            .doUpdateSet({
              status: 'pending',
              attempts: 0,
              payload: (eb: any) => eb.ref('excluded.payload'),
              max_attempts: (eb) => eb.ref('excluded.max_attempts'),
              next_attempt_at: (eb) => eb.ref('excluded.next_attempt_at'),
              reason: null,
              result: null,
              lease_owner: null,
              lease_until: null,
              finished_at: null,
              updated_at: us(now),
            })
            .where('jobs.status', '!=', 'running');
        })
        .executeTakeFirst();
      n += Number(res.numInsertedOrUpdatedRows ?? 0);
    }
    return n;
  }

  /**
   * Claims up to `limit` due jobs of `kinds` for `owner` until now + leaseMs, an equal share from
   * each project and kind with due jobs, so that one project's backlog, or one kind's (an LLM judge's
   * thousands of score tasks), does not hold back the rest (an experiment's job). Jobs of `skipRuns`
   * are left alone: their runs are paused.
   */
  async claim(
    owner: string,
    kinds: string[],
    limit: number,
    leaseMs: number,
    opts: { skipRuns?: string[] } = {},
  ): Promise<Job[]> {
    if (!kinds.length || limit <= 0) return [];
    const now = us(Date.now());
    const until = now + us(leaseMs);
    const skip = opts.skipRuns ?? [];
    const queues = await this.db
      .selectFrom('jobs')
      .select(['project_id', 'kind'])
      .distinct()
      .where((eb) => this.due(eb, kinds, now, skip))
      .limit(64)
      .execute();
    if (!queues.length) return [];
    // A random rotation so the queues past the 64th get their turn too.
    let active = queues.sort(() => Math.random() - 0.5);
    const out: Job[] = [];
    // Shares of what is left, again from the queues that gave their whole share, until the limit is
    // met or every queue ran dry: fewer than `limit` means nothing more of `kinds` is due.
    while (active.length && out.length < limit) {
      const share = Math.max(1, Math.ceil((limit - out.length) / active.length));
      const more: typeof active = [];
      for (const queue of active) {
        const want = Math.min(share, limit - out.length);
        if (want <= 0) break;
        const got = await this.claimQueue(owner, queue.kind, queue.project_id, want, now, until, skip);
        out.push(...got);
        if (got.length === want) more.push(queue);
      }
      active = more;
    }
    return out;
  }

  private due(eb: any, kinds: string[], now: number, skipRuns: string[]) {
    const parts = [
      eb('kind', 'in', kinds),
      eb('next_attempt_at', '<=', now),
      eb.or([
        eb('status', '=', 'pending'),
        eb.and([eb('status', '=', 'running'), eb('lease_until', '<', now)]),
      ]),
    ];
    if (skipRuns.length) parts.push(eb.or([eb('run_id', 'is', null), eb('run_id', 'not in', skipRuns)]));
    return eb.and(parts);
  }

  private async claimQueue(
    owner: string,
    kind: string,
    projectId: string | null,
    limit: number,
    now: number,
    until: number,
    skipRuns: string[],
  ): Promise<Job[]> {
    let pick = this.db
      .selectFrom('jobs')
      .select('id')
      .where((eb) =>
        eb.and([
          this.due(eb, [kind], now, skipRuns),
          projectId === null ? eb('project_id', 'is', null) : eb('project_id', '=', projectId),
        ]),
      )
      .orderBy('next_attempt_at')
      .orderBy('id')
      .limit(limit);
    if (this.dialect === 'postgres') pick = pick.forUpdate().skipLocked();
    const rows = await this.db
      .updateTable('jobs')
      .set({
        status: 'running',
        lease_owner: owner,
        lease_until: until,
        attempts: sql`attempts + 1`,
        updated_at: now,
      })
      .where('id', 'in', pick)
      .returningAll()
      .execute();
    return rows.map(toJob);
  }

  /** Extends `owner`'s leases on `ids` to now + leaseMs; answers the ids still held. */
  async renew(owner: string, ids: string[], leaseMs: number): Promise<Set<string>> {
    if (!ids.length) return new Set();
    const rows = await this.db
      .updateTable('jobs')
      .set({ lease_until: us(Date.now() + leaseMs) })
      .where('id', 'in', ids)
      .where('lease_owner', '=', owner)
      .where('status', '=', 'running')
      .returning('id')
      .execute();
    return new Set(rows.map((r) => r.id));
  }

  /**
   * Ends or reschedules a job `owner` holds: done or failed (finished), or pending again from
   * `nextAt` with a reason (a retry, or a wait that gives the attempt back). False when not held.
   */
  async settle(
    owner: string,
    id: string,
    s:
      | { status: 'done' | 'failed' | 'cancelled'; reason: string | null; result?: unknown }
      | { status: 'pending'; reason: string; nextAt: number; refundAttempt?: boolean },
  ): Promise<boolean> {
    const now = us(Date.now());
    const set: Record<string, unknown> = {
      status: s.status,
      reason: s.reason,
      lease_owner: null,
      lease_until: null,
      updated_at: now,
    };
    if (s.status === 'pending') {
      set.next_attempt_at = us(s.nextAt);
      if (s.refundAttempt) set.attempts = sql`attempts - 1`;
    } else {
      set.finished_at = now;
      set.result = toJson(s.result ?? null);
    }
    const res = await this.db
      .updateTable('jobs')
      .set(set as any)
      .where('id', '=', id)
      .where('lease_owner', '=', owner)
      .where('status', '=', 'running')
      .executeTakeFirst();
    return Number(res.numUpdatedRows) > 0;
  }

  /** Gives back every job `owner` holds (shutdown): pending again at once, the attempt refunded. */
  async releaseAll(owner: string): Promise<void> {
    await this.db
      .updateTable('jobs')
      .set({
        status: 'pending',
        lease_owner: null,
        lease_until: null,
        attempts: sql`attempts - 1`,
        updated_at: us(Date.now()),
      })
      .where('lease_owner', '=', owner)
      .where('status', '=', 'running')
      .execute();
  }

  async byKey(kind: string, key: string): Promise<Job | null> {
    const r = await this.db
      .selectFrom('jobs')
      .selectAll()
      .where('kind', '=', kind)
      .where('key', '=', key)
      .executeTakeFirst();
    return r ? toJob(r) : null;
  }

  /** Jobs of a kind by status and reason (a run's or everyone's). */
  async counts(
    kind: string,
    runId: string | null,
  ): Promise<{ status: JobStatus; reason: string | null; n: number }[]> {
    let q = this.db
      .selectFrom('jobs')
      .select(['status', 'reason', (eb) => eb.fn.countAll<number>().as('n')])
      .where('kind', '=', kind);
    if (runId !== null) q = q.where('run_id', '=', runId);
    const rows = await q.groupBy(['status', 'reason']).execute();
    return rows.map((r) => ({ status: r.status as JobStatus, reason: r.reason, n: Number(r.n) }));
  }

  /** Whether any job of `kinds` is pending or running (tests and benchmarks wait for a drain). */
  async open(kinds: string[]): Promise<number> {
    const r = await this.db
      .selectFrom('jobs')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('kind', 'in', kinds)
      .where('status', 'in', ['pending', 'running'])
      .executeTakeFirstOrThrow();
    return Number(r.n);
  }

  /** Deletes up to `limit` jobs of `kind` that finished before `before` (epoch ms); answers how many. */
  async prune(kind: string, before: number, limit: number): Promise<number> {
    const ids = this.db
      .selectFrom('jobs')
      .select('id')
      .where('kind', '=', kind)
      .where('status', 'in', ['done', 'failed', 'cancelled'])
      .where('finished_at', '<', us(before))
      .limit(limit);
    const res = await this.db.deleteFrom('jobs').where('id', 'in', ids).executeTakeFirst();
    return Number(res.numDeletedRows);
  }

  /** Makes the pending jobs of a run due now (a paused run resumed). */
  async wake(runId: string, kind: string): Promise<void> {
    await this.db
      .updateTable('jobs')
      .set({ next_attempt_at: us(Date.now()) })
      .where('run_id', '=', runId)
      .where('kind', '=', kind)
      .where('status', '=', 'pending')
      .execute();
  }
}
