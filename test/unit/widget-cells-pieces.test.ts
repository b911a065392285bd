import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { type TestContext, test } from 'node:test';
import { staticColumn } from '../../src/services/dashboard-columns.ts';
import { openSqlite } from '../../src/store/db.ts';
import { migrate } from '../../src/store/migrate.ts';
import type { CellQuery, MetricSpec } from '../../src/store/widget-cells.ts';
import { SqliteWidgetCells } from '../../src/store/widget-cells-sqlite.ts';

const HOUR_US = 3_600_000_000;
const T0 = Date.UTC(2025, 0, 1) * 1000;

/** A migrated SQLite file store without reader threads (widget data is then read here), removed after the test. */
async function storeWith(t: TestContext, count: number) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'spanbase-pieces-'));
  const store = openSqlite(path.join(dir, 'db.sqlite'), { readers: 0 });
  t.after(async () => {
    await store.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });
  await migrate(store);
  const insert = store.sqlite!.prepare(
    `insert into records (id, project_id, run_id, type, name, created_at, updated_at, duration_ns, num_total_tokens)
     values (?, 'p', 'r', 'llm', ?, ?, ?, ?, ?)`,
  );
  let seed = 7;
  const next = (n: number) => {
    seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648;
    return seed % n;
  };
  store.sqlite!.transaction(() => {
    for (let i = 0; i < count; i++) {
      // Few names met often (read as dictionary codes after the first piece) and some met once;
      // times on 50 points per hour, so many records share a microsecond.
      const name = next(10) < 8 ? ['a', 'b', 'c', 'd'][next(4)] : `once-${i}`;
      const at = T0 + next(3) * HOUR_US + next(50) * 1000;
      insert.run(randomUUID(), name, at, at, next(5) === 0 ? null : next(1000) * 1000, next(100));
    }
  })();
  return store;
}

function query(buckets: number): CellQuery {
  const metric = (key: string, id: string, percentiles: number[]): MetricSpec => ({
    key,
    column: staticColumn(id)!,
    kind: 'number',
    needs: new Set(['sum', 'min', 'max']),
    percentiles: new Set(percentiles),
    totalPercentiles: new Set(percentiles.slice(-1)),
  });
  return {
    runId: 'r',
    startUs: T0,
    endUs: T0 + 3 * HOUR_US,
    firstUs: T0,
    sizeUs: (3 * HOUR_US) / buckets,
    buckets,
    tree: null,
    group: staticColumn('name'),
    metrics: [metric('m0', 'duration_ns', [50, 95]), metric('m1', 'num_total_tokens', [])],
  };
}

test('a grouped scan read in pieces answers as one read of each bucket', async (t) => {
  const store = await storeWith(t, 900);
  // Hour buckets (one bucket a statement), and 1,080 buckets of 10 s (several a statement).
  for (const buckets of [3, 1080]) {
    const q = query(buckets);
    const whole = await new SqliteWidgetCells(store).cells(q, 3);
    const cellCount = whole.cells.reduce((n, c) => n + Number(c.m0_n ?? 0), 0);
    assert.ok(cellCount > 0, 'the shown groups have values');
    for (const piece of [1, 7, 100]) {
      const pieces = await new SqliteWidgetCells(store, piece).cells(q, 3);
      assert.deepEqual(pieces, whole, `${buckets} buckets, pieces of ${piece}`);
    }
  }
});
