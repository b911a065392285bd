/**
 * `case_sensitive: false` folds case the same way on every store, whatever the database's locale:
 * JavaScript's toLowerCase (src/domain/text.ts foldCase). PostgreSQL runs once more on a database
 * whose LC_CTYPE is "C", where plain lower() leaves É, Σ and İ as they are.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import pg from 'pg';
import { foldCase } from '../../src/domain/text.ts';
import { ingestTraces } from '../property/support.ts';
import { type TestServer, startTestServer, storesUnderTest } from '../helpers/server.ts';

const NAMES = [
  'ls06-Café-a',
  'ls07-CAFÉ-b',
  'ls08-cafe-c',
  'ΟΔΟΣ',
  'οδος',
  'ΣΑΣ ΟΔΟΣ',
  'İstanbul',
  'istanbul',
  'STRASSE',
  'straße',
  'STRAẞE',
];
const TERMS = ['-café-', 'CAFÉ', 'ΟΔΟΣ', 'οδοσ', 'ος', 'σ', 'ς', 'İ', 'i\u0307', 'ß', 'SS', 'ẞ'];

const folds = (op: 'eq' | 'contains', value: string, term: string) =>
  op === 'eq' ? foldCase(value) === foldCase(term) : foldCase(value).includes(foldCase(term));

interface Variant {
  label: string;
  store: 'sqlite' | 'postgres';
  /** A database of its own, with this LC_CTYPE. */
  ctype?: string;
}

const variants: Variant[] = storesUnderTest().map((store) => ({ label: store, store }));
if (process.env.SPANBASE_TEST_DATABASE_URL)
  variants.push({ label: 'postgres, LC_CTYPE C', store: 'postgres', ctype: 'C' });

async function admin(sql: string): Promise<void> {
  const c = new pg.Client({ connectionString: process.env.SPANBASE_TEST_DATABASE_URL });
  await c.connect();
  try {
    await c.query(sql);
  } finally {
    await c.end();
  }
}

for (const v of variants) {
  describe(`case-insensitive filters fold like JavaScript [${v.label}]`, () => {
    let s: TestServer;
    let projectId: string;
    let logStreamId: string;
    const database = `spanbase_fold_${process.pid}`;
    before(async () => {
      let databaseUrl: string | undefined;
      if (v.ctype) {
        await admin(`drop database if exists ${database}`);
        await admin(
          `create database ${database} template template0 encoding 'UTF8' lc_collate 'C' lc_ctype '${v.ctype}'`,
        );
        const url = new URL(process.env.SPANBASE_TEST_DATABASE_URL!);
        url.pathname = `/${database}`;
        databaseUrl = url.toString();
      }
      s = await startTestServer(v.store, {}, { databaseUrl });
      projectId = (await s.call('POST', '/v2/projects', { name: 'fold' })).body.id;
      for (const name of NAMES) {
        const r = await s.call('POST', `/v2/projects/${projectId}/log_streams`, { name });
        assert.equal(r.status, 200, r.text);
        if (name === NAMES[0]) logStreamId = r.body.id;
      }
      await ingestTraces(
        s,
        projectId,
        logStreamId,
        NAMES.map((name) => ({ name, input: `said: ${name}!`, tags: [name], user_metadata: { k: name } })),
      );
    });
    after(async () => {
      await s.close();
      if (v.ctype) await admin(`drop database if exists ${database}`);
    });

    test('log stream names: the issue\'s "-café-" finds Café and CAFÉ, and every term matches as JavaScript folds', async () => {
      const search = async (operator: string, value: string) => {
        const r = await s.call('POST', `/v2/projects/${projectId}/log_streams/search`, {
          filters: [{ name: 'name', operator, value, case_sensitive: false }],
          limit: 100,
        });
        assert.equal(r.status, 200, r.text);
        return r.body.log_streams.map((l: { name: string }) => l.name).sort();
      };
      assert.deepEqual(await search('contains', '-café-'), ['ls06-Café-a', 'ls07-CAFÉ-b']);
      assert.deepEqual(await search('eq', 'ΟΔΟΣ'), ['ΟΔΟΣ', 'οδος']);
      assert.deepEqual(await search('contains', 'ß'), ['STRAẞE', 'straße']);
      for (const op of ['eq', 'contains'] as const)
        for (const term of TERMS)
          assert.deepEqual(
            await search(op, term),
            NAMES.filter((n) => folds(op, n, term)).sort(),
            `${op} ${JSON.stringify(term)}`,
          );
    });

    test('record filters (text, metadata, tags, and input through the text index) fold the same', async () => {
      const search = async (filter: Record<string, unknown>) => {
        const r = await s.call('POST', `/v2/projects/${projectId}/traces/search`, {
          log_stream_id: logStreamId,
          filters: [{ ...filter, case_sensitive: false }],
          limit: 100,
        });
        assert.equal(r.status, 200, r.text);
        return r.body.records.map((x: { name: string }) => x.name).sort();
      };
      // Once with the text index still behind (records checked directly), once caught up.
      for (const indexed of [false, true]) {
        if (indexed) await s.running.services.search.indexer.drain();
        for (const term of TERMS) {
          const want = (op: 'eq' | 'contains', of: (n: string) => string) =>
            NAMES.filter((n) => folds(op, of(n), term)).sort();
          const at = `${JSON.stringify(term)}${indexed ? ' (indexed)' : ''}`;
          assert.deepEqual(
            await search({ column_id: 'input', operator: 'contains', value: term, type: 'text' }),
            want('contains', (n) => `said: ${n}!`),
            `input contains ${at}`,
          );
          assert.deepEqual(
            await search({ column_id: 'name', operator: 'eq', value: term, type: 'text' }),
            want('eq', (n) => n),
            `name eq ${at}`,
          );
          assert.deepEqual(
            await search({ column_id: 'user_metadata/k', operator: 'contains', value: term, type: 'text' }),
            want('contains', (n) => n),
            `user_metadata contains ${at}`,
          );
          assert.deepEqual(
            await search({ column_id: 'tags', operator: 'contains', value: term, type: 'collection' }),
            want('eq', (n) => n),
            `tags contains ${at}`,
          );
        }
      }
    });
  });
}
