/**
 * store/search-json.ts: the SQLite statement that renders search records as JSON gives, byte for byte,
 * what recordToApi and the response schema's serializer give, and leaves to JavaScript every row it
 * cannot render exactly. domain/record-json.ts: JSON.stringify of recordToApi is that serializer's
 * text, and a page rendered whole is the page of its records' texts.
 */
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import fc from 'fast-check';
import fastJson from 'fast-json-stringify';
import type { RecordFeedback } from '../../src/domain/annotations.ts';
import {
  RECORD_COLUMNS,
  RECORD_TYPES,
  PROMOTED_METRICS,
  type RecordRow,
  type StoredRecord,
  encodeIo,
  recordToApi,
} from '../../src/domain/records.ts';
import { RecordSchema } from '../../src/schemas/records.ts';
import { pageBody, pageBodyOf, recordJson } from '../../src/domain/record-json.ts';
import { openSqlite } from '../../src/store/db.ts';
import { migrate } from '../../src/store/migrate.ts';
import { SqliteSearch } from '../../src/store/search-sqlite.ts';
import { pageJsonStatement } from '../../src/store/search-json.ts';

const store = openSqlite(':memory:');
await migrate(store);
const h = store.sqlite!;
const repo = new SqliteSearch(store);
after(() => store.db.destroy());

const insert = h.prepare(
  `insert into records (${RECORD_COLUMNS.join(', ')}) values (${RECORD_COLUMNS.map((c) => `@${c}`).join(', ')})`,
);
const readRow = h.prepare('select * from records where rowid = ?');
const rendered = (counts: boolean) => h.prepare(pageJsonStatement(counts));

/** Text as storage keeps it: no NUL, no lone surrogate (ingestion makes both U+FFFD). */
const storable = (s: string) => s.replace(/\0/g, '\ufffd').toWellFormed();
const text = fc
  .oneof(
    fc.string(),
    fc.string({ unit: 'binary' }),
    fc.constantFrom(
      '',
      '"',
      '\\',
      '\u2028\u2029',
      '\u007f\u0080',
      '😀 é',
      '\b\f\n\r\t\u0001\u001f',
      '"in":',
      '"out":',
    ),
  )
  .map(storable);
const key = fc.oneof(
  { arbitrary: fc.string(), weight: 6 },
  { arbitrary: text, weight: 1 },
  fc.constantFrom('__proto__', '0', '7', '12', '-1', '1.5', 'constructor', 'duration_ns', 'num_x', 'cost'),
  // Names of Object.prototype's properties.
  fc.constantFrom(...Object.getOwnPropertyNames(Object.prototype)),
  // Line terminators, which a key pattern of `.` does not match.
  fc.constantFrom('a\nb', '\n', '\r\n', 'x\u2028', '\u2029y', '\u0085'),
);
const finite = fc.double({ noNaN: true, noDefaultInfinity: true });
const scalar = fc.oneof(text, finite, fc.integer(), fc.boolean());
const json = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small' },
    scalar,
    fc.constant(null),
    fc.array(tie('value'), { maxLength: 3 }),
    fc.dictionary(key, tie('value'), { maxKeys: 3 }),
  ),
})).value;
const uuid = fc.uuid();
const nullable = <T>(a: fc.Arbitrary<T>) => fc.option(a, { nil: null });
/** The last microsecond of year 9999 (as a double: beyond the safe integers, as no stored value is). */
const MAX_US = 253_402_300_800_000_000;
const micros = fc.oneof(
  { arbitrary: fc.integer({ min: 0, max: 2 ** 31 }).map((s) => s * 1_000_000), weight: 6 },
  fc.integer({ min: 0, max: 2 ** 31 }).map((s) => s * 1_000_000 + 123_000),
  fc.integer({ min: 0, max: 2 ** 31 }).map((s) => s * 1_000_000 + 7),
  fc.maxSafeNat(),
  fc.integer({ min: -(2 ** 31), max: -1 }).map((s) => s * 1000),
  fc.constantFrom(0, 1, 999, 1000, Number.MAX_SAFE_INTEGER, MAX_US),
);
const io = fc.oneof(
  { arbitrary: text, weight: 6 },
  fc.record({ role: fc.constantFrom('user', 'assistant'), content: text }),
  fc.array(fc.oneof(text, fc.record({ role: fc.constant('user'), content: text })), { maxLength: 3 }),
);
const body = fc.record(
  {
    in: io,
    out: io,
    rin: json,
    rout: json,
    din: text,
    dout: text,
    step: fc.integer(),
    x: fc.record(
      {
        temperature: finite,
        finish_reason: text,
        tools: fc.array(fc.dictionary(key, json, { maxKeys: 2 }), { maxLength: 2 }),
        events: fc.array(json, { maxLength: 2 }),
        tool_call_id: text,
        agent_type: text,
        previous_session_id: uuid,
      },
      { requiredKeys: [] },
    ),
    tok: fc.constant(['num_input_tokens']),
  },
  { requiredKeys: [] },
);
const metric = nullable(fc.maxSafeNat());

const row: fc.Arbitrary<RecordRow> = fc
  .record({
    id: uuid,
    project_id: uuid,
    run_id: uuid,
    type: fc.constantFrom(...RECORD_TYPES),
    session_id: nullable(uuid),
    trace_id: nullable(uuid),
    parent_id: nullable(uuid),
    name: text,
    created_at: micros,
    updated_at: micros,
    is_complete: fc.constantFrom(0, 1),
    status_code: nullable(fc.integer()),
    duration_ns: metric,
    num_input_tokens: metric,
    num_output_tokens: metric,
    num_total_tokens: metric,
    num_cache_read_input_tokens: metric,
    num_cache_creation_input_tokens: metric,
    time_to_first_token_ns: metric,
    model: nullable(text),
    external_id: nullable(text),
    error_message: nullable(text),
    num_children: fc.nat(),
    metrics: fc.oneof(
      fc.constant(null),
      fc.dictionary(fc.string(), finite, { maxKeys: 3 }).map((m) => JSON.stringify(m)),
      fc.dictionary(key, finite, { maxKeys: 3 }).map((m) => JSON.stringify(m)),
    ),
    user_metadata: nullable(fc.dictionary(key, scalar, { maxKeys: 3 }).map((m) => JSON.stringify(m))),
    dataset_metadata: nullable(fc.dictionary(key, scalar, { maxKeys: 3 }).map((m) => JSON.stringify(m))),
    tags: nullable(fc.array(text, { maxLength: 3 }).map((t) => JSON.stringify(t))),
    body: nullable(body),
    input: nullable(io),
    output: nullable(io),
  })
  .map(({ body: b, input, output, ...r }) => {
    // As ingestion stores them: the flattened text, and the skeleton of a structured value in body.
    const bodyOut: Record<string, unknown> = { ...(b ?? {}) };
    delete bodyOut.in;
    delete bodyOut.out;
    const i = encodeIo(input);
    const o = encodeIo(output);
    if (i.skeleton !== undefined) bodyOut.in = i.skeleton;
    if (o.skeleton !== undefined) bodyOut.out = o.skeleton;
    return {
      ...r,
      id: `${r.id}`,
      body:
        b === null && i.skeleton === undefined && o.skeleton === undefined ? null : JSON.stringify(bodyOut),
      input_text: i.text,
      output_text: o.text,
    };
  });

/** No key of the stored maps is lost: the rendered record holds every one, with its value. */
function keepsEveryKey(stored: StoredRecord, rendered: string) {
  const api = JSON.parse(rendered);
  const parse = (v: unknown) => (v === null ? {} : JSON.parse(v as string));
  assert.deepEqual(api.user_metadata, parse(stored.user_metadata));
  assert.deepEqual(api.dataset_metadata, parse(stored.dataset_metadata));
  const extra = parse(stored.metrics);
  for (const k of Object.keys(extra)) {
    // A promoted metric's column wins over a stored key of the same name (never written so).
    if ((PROMOTED_METRICS as readonly string[]).includes(k) && stored[k as keyof StoredRecord] !== null)
      continue;
    assert.ok(Object.hasOwn(api.metrics, k), `metrics key ${JSON.stringify(k)}`);
    assert.equal(api.metrics[k], extra[k]);
  }
}

let n = 0;
/** Stores a row; its rowid and the row as read back. */
function put(r: RecordRow): { rowid: number; stored: StoredRecord } {
  const id = `00000000-0000-4000-8000-${String(++n).padStart(12, '0')}`;
  const rowid = Number(insert.run({ ...r, id }).lastInsertRowid);
  return { rowid, stored: readRow.get(rowid) as StoredRecord };
}

const feedback: fc.Arbitrary<RecordFeedback> = fc.record({
  annotations: fc.array(
    fc.record({
      template_id: uuid,
      author: fc.oneof(
        uuid,
        text.map((t) => `end_user:${t}`),
      ),
      source: fc.constantFrom('reviewer', 'end_user'),
      user_id: uuid,
      external_user_id: nullable(text),
      value: json,
      explanation: nullable(text),
      created_at: micros,
      updated_at: micros,
    }),
    { maxLength: 3 },
  ),
  aggregates: fc.array(
    fc.record({
      template_id: uuid,
      template_type: fc.constantFrom('thumbs', 'stars', 'score', 'categorical', 'tags', 'text'),
      source: fc.constantFrom('reviewer', 'end_user'),
      aggregate: fc.record({
        n: fc.nat(),
        sum: nullable(finite),
        min: nullable(finite),
        max: nullable(finite),
        counts: fc.dictionary(key, fc.nat(), { maxKeys: 3 }),
      }),
    }),
    { maxLength: 3 },
  ),
  queueIds: fc.array(uuid, { maxLength: 3 }),
}) as fc.Arbitrary<RecordFeedback>;

test("JSON.stringify of recordToApi is the response schema serializer's text", () => {
  const serialize = fastJson(RecordSchema as object);
  fc.assert(
    fc.property(row, fc.boolean(), fc.option(feedback, { nil: undefined }), (r, counts, f) => {
      const { stored } = put(r);
      const api = recordToApi(stored, { includeCounts: counts, feedback: f });
      assert.equal(recordJson(stored, counts, f), serialize(api));
    }),
    { numRuns: 1500 },
  );
});

test('a page rendered whole is the page of its records rendered one by one', () => {
  fc.assert(
    fc.property(
      fc.array(row, { maxLength: 4 }),
      fc.boolean(),
      fc.nat(1000),
      fc.integer({ min: 1, max: 100 }),
      (rs, more, startingToken, limit) => {
        const stored = rs.map((r) => put(r).stored);
        const f = { startingToken, limit, includeCounts: more };
        const lastId = stored.length ? stored[stored.length - 1].id : null;
        const one = pageBody(
          stored.map((s) => Buffer.from(recordJson(s, more))),
          lastId,
          more,
          f,
        );
        const whole = pageBodyOf(
          stored.map((s) => recordToApi(s, { includeCounts: more })),
          lastId,
          more,
          f,
        );
        assert.equal(whole.toString('utf8'), one.toString('utf8'));
        JSON.parse(whole.toString('utf8'));
      },
    ),
    { numRuns: 300 },
  );
});

test('the statement renders a record exactly as recordToApi and the response schema do', async () => {
  let bySql = 0;
  let total = 0;
  await fc.assert(
    fc.asyncProperty(row, fc.boolean(), async (r, counts) => {
      const { rowid, stored } = put(r);
      const expected = recordJson(stored, counts);
      keepsEveryKey(stored, expected);
      const got = rendered(counts).get(JSON.stringify([rowid])) as {
        rid: number;
        id: string;
        j: Buffer | null;
      };
      assert.equal(got.rid, rowid);
      assert.equal(got.id, stored.id);
      total++;
      if (got.j !== null) {
        bySql++;
        assert.equal(got.j.toString('utf8'), expected);
      }
      // With the rows left to JavaScript: the page's records are always exactly these.
      const [page] = await repo.pageJsonRows(store.db, [rowid], counts);
      assert.equal(Buffer.from(page.j!).toString('utf8'), expected);
    }),
    { numRuns: 1500 },
  );
  // Most generated rows are rendered by the statement (the check above is not all fallback).
  assert.ok(bySql > total / 5, `${bySql} of ${total} rendered by SQL`);
});

test('rows the statement cannot render exactly are left to JavaScript', async () => {
  const base: RecordRow = {
    id: '',
    project_id: '00000000-0000-4000-8000-00000000000a',
    run_id: '00000000-0000-4000-8000-00000000000b',
    type: 'llm',
    session_id: null,
    trace_id: null,
    parent_id: null,
    name: 'n',
    created_at: 1_700_000_000_000_001,
    updated_at: 1_700_000_000_000_000,
    is_complete: 1,
    status_code: null,
    duration_ns: 5,
    num_input_tokens: null,
    num_output_tokens: null,
    num_total_tokens: null,
    num_cache_read_input_tokens: null,
    num_cache_creation_input_tokens: null,
    time_to_first_token_ns: null,
    model: 'm',
    external_id: null,
    error_message: null,
    num_children: 0,
    metrics: '{"cost":0.5}',
    user_metadata: '{}',
    dataset_metadata: '{}',
    tags: '[]',
    body: '{"step":3,"x":{"temperature":0.7}}',
    input_text: 'hi',
    output_text: null,
  };
  const sqlRenders = async (r: RecordRow) => {
    const { rowid, stored } = put(r);
    const got = rendered(true).get(JSON.stringify([rowid])) as { j: Buffer | null };
    const [page] = await repo.pageJsonRows(store.db, [rowid], true);
    const expected = recordJson(stored, true);
    keepsEveryKey(stored, expected);
    assert.equal(Buffer.from(page.j!).toString('utf8'), expected);
    if (got.j !== null) assert.equal(got.j.toString('utf8'), expected);
    return got.j !== null;
  };
  assert.equal(await sqlRenders(base), true);
  // Keys that hold a line terminator or name a property of Object.prototype are the statement's.
  for (const r of [
    { metrics: '{"__proto__":1,"constructor":2,"toString":3,"a\\nb":4}' },
    { user_metadata: '{"a\\nb":"x","__proto__":"y","valueOf":1}', dataset_metadata: '{"\u2028":true}' },
  ] as Partial<RecordRow>[]) {
    assert.equal(await sqlRenders({ ...base, ...r }), true, JSON.stringify(r));
  }
  const io = encodeIo([{ role: 'user', content: 'hello' }]);
  for (const r of [
    { body: JSON.stringify({ in: io.skeleton }), input_text: io.text },
    { body: JSON.stringify({ out: io.skeleton }), output_text: io.text },
    { created_at: -1000 },
    { updated_at: 253_402_300_800_000_000 },
    { metrics: '{"7":1,"cost":2}' },
    { metrics: '{"duration_ns":1}' },
    { duration_ns: 1.5 },
    { body: '{"step":' },
  ] as Partial<RecordRow>[]) {
    if (r.body === '{"step":') {
      // Not JSON (never written so): left to JavaScript, which fails on it as before.
      const { rowid } = put({ ...base, ...r });
      assert.equal((rendered(true).get(JSON.stringify([rowid])) as { j: Buffer | null }).j, null);
      continue;
    }
    assert.equal(await sqlRenders({ ...base, ...r }), false, JSON.stringify(r));
  }
});

test('a rendered record carries only the fields of the response schema', () => {
  const allowed = new Set(Object.keys(RecordSchema.properties));
  fc.assert(
    fc.property(row, (r) => {
      const { rowid } = put(r);
      const got = rendered(true).get(JSON.stringify([rowid])) as { j: Buffer | null };
      if (got.j === null) return;
      for (const k of Object.keys(JSON.parse(got.j.toString('utf8')))) assert.ok(allowed.has(k), k);
    }),
    { numRuns: 200 },
  );
});
