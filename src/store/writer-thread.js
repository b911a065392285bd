// The SQLite writer thread (sqlite-writer.ts). Plain JavaScript, loaded without the TypeScript loader:
// it needs only better-sqlite3 and stays small. Its data: WriterData; its calls: WriterCall, answered
// in the order they come.
import { parentPort, workerData } from 'node:worker_threads';
import SQLite from 'better-sqlite3';

const { file, pragmas } = workerData;
const db = new SQLite(file, { fileMustExist: true });
for (const p of pragmas) db.pragma(p);

/** Statements by their SQL text: the ingest path uses a fixed, small set. */
const statements = new Map();
const statement = (sql) => {
  let s = statements.get(sql);
  if (!s) {
    s = db.prepare(sql);
    statements.set(sql, s);
  }
  return s;
};

let open = false;
/**
 * The error that ended the open transaction: every later call of that transaction fails with it
 * (its commit included) until a rollback or the next begin, so that nothing the caller sent after the
 * failure is written outside the transaction.
 */
let failed = null;

function handle(msg) {
  if (msg.op === 'begin' || msg.op === 'rollback') {
    if (db.inTransaction) db.exec('rollback');
    failed = null;
    open = msg.op === 'begin';
    if (open) db.exec('begin');
    return null;
  }
  if (failed) throw failed;
  try {
    switch (msg.op) {
      case 'all': {
        const s = statement(msg.sql);
        const rows = [];
        for (const args of msg.args) for (const row of s.all(args)) rows.push(row);
        return rows;
      }
      case 'run':
        for (const [sql, args] of msg.steps) statement(sql).run(args);
        return null;
      case 'commit':
        db.exec('commit');
        open = false;
        return null;
      default:
        throw new Error(`unknown writer call ${msg.op}`);
    }
  } catch (err) {
    if (open) {
      failed = err;
      if (db.inTransaction) db.exec('rollback');
    }
    throw err;
  }
}

parentPort.on('message', (msg) => {
  try {
    parentPort.postMessage({ id: msg.id, result: handle(msg) });
  } catch (err) {
    parentPort.postMessage({ id: msg.id, error: { message: err.message, code: err.code } });
  }
});
