import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { parseSessionRequest, parseTracesRequest } from '../../src/domain/ingest.ts';
import { openSqlite } from '../../src/store/db.ts';
import { ingestStore } from '../../src/store/ingest.ts';
import { sessionFlow, tracesFlow } from '../../src/store/ingest-flow.ts';
import { migrate } from '../../src/store/migrate.ts';
import { SqliteWriter } from '../../src/store/sqlite-writer.ts';

/** A SQLite store with a project and a log stream, for the tests here. */
async function groupStore(t: { after: (fn: () => Promise<void>) => void }) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'spanbase-group-'));
  const store = openSqlite(path.join(dir, 'spanbase.db'), { checkpointer: true });
  const ingest = ingestStore(store);
  t.after(async () => {
    await ingest.close();
    await store.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });
  await migrate(store);
  const now = Date.now() * 1000;
  const projectId = crypto.randomUUID();
  const runId = crypto.randomUUID();
  const meta = { created_by: 'test', created_at: now, updated_at: now };
  await store.db
    .insertInto('projects')
    .values({ id: projectId, name: 'p', type: 'gen_ai', ...meta })
    .execute();
  await store.db
    .insertInto('runs')
    .values({
      id: runId,
      project_id: projectId,
      kind: 'log_stream',
      name: 'ls',
      num_traces: 0,
      num_spans: 0,
      has_user_created_sessions: 0,
      ...meta,
    })
    .execute();
  return { store, ingest, ctx: { projectId, runId, now } };
}

/**
 * A session (external id conv-1) and its trace, then the same trace again with another output, and a
 * session request by that external id.
 */
function sameTraceTwice(ctx: { runId: string; now: number }) {
  const traceId = crypto.randomUUID();
  const sessionId = crypto.randomUUID();
  const trace = (output: string) => ({
    id: traceId,
    name: 'chat',
    input: 'question',
    output,
    session_id: sessionId,
    spans: [{ type: 'llm', id: `${traceId.slice(0, -4)}0001`, name: 'gen', input: 'q', output }],
  });
  const first = parseTracesRequest(
    {
      log_stream_id: ctx.runId,
      sessions: [{ id: sessionId, name: 'conversation', external_id: 'conv-1' }],
      traces: [trace('first answer')],
    },
    {},
    ctx.now,
  );
  const again = parseTracesRequest(
    { log_stream_id: ctx.runId, traces: [trace('second answer')] },
    {},
    ctx.now,
  );
  const byExternal = parseSessionRequest({ log_stream_id: ctx.runId, external_id: 'conv-1' });
  return { sessionId, first, again, byExternal };
}

/**
 * SQLite writes the requests queued together in one transaction, and plans each on the rows of the
 * store with those of the group's earlier plans laid over them. Those reads must see what the earlier
 * jobs wrote: else a job plans an insert of a row already planned, its write fails, and the group is
 * written again a job at a time (one commit a job). One commit for the group says the reads saw them.
 */
test('requests written in one group see the rows planned before them, by id and by external id', async (t) => {
  const { store, ingest, ctx } = await groupStore(t);
  const { sessionId, first, again, byExternal } = sameTraceTwice(ctx);

  const commits = t.mock.method(SqliteWriter.prototype, 'commit');
  // Queued in one turn: one drain writes the three together.
  const written = await Promise.all([
    ingest.run(() => tracesFlow(first, ctx)),
    ingest.run(() => tracesFlow(again, ctx)),
    ingest.run(() => sessionFlow(byExternal, ctx)),
  ]);
  assert.equal(commits.mock.callCount(), 1, 'one commit: no job of the group was written again alone');
  assert.equal((written[2].result as { id: string }).id, sessionId, 'the session found by its external id');
  const rows = store.sqlite!.prepare('select id, type, output_text from records order by type').all();
  assert.deepEqual(
    rows.map((r: any) => [r.type, r.output_text]),
    [
      ['llm', 'second answer'],
      ['session', 'second answer'],
      ['trace', 'second answer'],
    ],
  );
  const run = store.sqlite!.prepare('select num_traces, num_spans from runs where id = ?').get(ctx.runId);
  assert.deepEqual(run, { num_traces: 1, num_spans: 1 });
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * The next group is planned while the writer commits the one before: its reads must see that group's
 * rows, which the store does not show yet, and its writes must wait for that commit.
 */
test('a group planned while the group before commits sees its rows and commits after it', async (t) => {
  const { store, ingest, ctx } = await groupStore(t);
  const { sessionId, first, again, byExternal } = sameTraceTwice(ctx);

  // The first commit is slow: the requests sent meanwhile are planned before it ends.
  const events: string[] = [];
  const commit = SqliteWriter.prototype.commit;
  const commits = t.mock.method(SqliteWriter.prototype, 'commit', async function (this: SqliteWriter) {
    const n = commits.mock.callCount();
    if (n === 0) await sleep(100);
    await commit.call(this);
    events.push(`commit ${n + 1}`);
  });
  const planned = (name: string, flow: () => ReturnType<typeof tracesFlow>) => () => {
    events.push(`plan ${name}`);
    return flow();
  };
  const one = ingest.run(planned('first', () => tracesFlow(first, ctx)));
  await sleep(30);
  const [, two, three] = await Promise.all([
    one,
    ingest.run(planned('again', () => tracesFlow(again, ctx))),
    ingest.run(() => sessionFlow(byExternal, ctx)),
  ]);
  assert.deepEqual(
    events,
    ['plan first', 'plan again', 'commit 1', 'commit 2'],
    'planned during the commit before',
  );
  assert.equal(commits.mock.callCount(), 2, 'two commits: no job was written again alone');
  assert.equal(two.plan?.inserts.length, 0, 'the second request updates the rows of the first');
  assert.equal((three.result as { id: string }).id, sessionId, 'the session found by its external id');
  const rows = store.sqlite!.prepare('select type, output_text from records order by type').all();
  assert.deepEqual(
    rows.map((r: any) => [r.type, r.output_text]),
    [
      ['llm', 'second answer'],
      ['session', 'second answer'],
      ['trace', 'second answer'],
    ],
  );
  const run = store.sqlite!.prepare('select num_traces, num_spans from runs where id = ?').get(ctx.runId);
  assert.deepEqual(run, { num_traces: 1, num_spans: 1 });
});

/** Should the group before fail, a group planned over its rows is planned again on the store alone. */
test('a group planned over a group that then fails is planned again', async (t) => {
  const { store, ingest, ctx } = await groupStore(t);
  const sessionId = crypto.randomUUID();
  const first = parseTracesRequest(
    {
      log_stream_id: ctx.runId,
      sessions: [{ id: sessionId, name: 'conversation', external_id: 'conv-1' }],
      traces: [{ id: crypto.randomUUID(), name: 'chat', input: 'q', output: 'a', session_id: sessionId }],
    },
    {},
    ctx.now,
  );
  const byExternal = parseSessionRequest({ log_stream_id: ctx.runId, external_id: 'conv-1' });
  const commit = SqliteWriter.prototype.commit;
  const commits = t.mock.method(SqliteWriter.prototype, 'commit', async function (this: SqliteWriter) {
    if (commits.mock.callCount() === 0) {
      await sleep(100);
      throw new Error('the disk is full');
    }
    await commit.call(this);
  });
  const one = ingest.run(() => tracesFlow(first, ctx));
  await sleep(30);
  const two = ingest.run(() => sessionFlow(byExternal, ctx));
  await assert.rejects(one, /the disk is full/);
  const found = (await two).result as { id: string };
  assert.notEqual(found.id, sessionId, 'not the session of the failed group');
  const rows = store.sqlite!.prepare('select id, type, external_id from records').all();
  assert.deepEqual(rows, [{ id: found.id, type: 'session', external_id: 'conv-1' }]);
});
