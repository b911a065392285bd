// What the two builds (the console's, web/build.ts, and the server's, scripts/build.js) share: a
// build records a hash of the files it was made from, and is stale when that hash changes; builds
// started at once (test files run in parallel) take turns on a lock file. Plain JavaScript, so that
// `npx spanbase` and `npm start` check their build without a TypeScript loader.
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

/** The repository's root. */
export const ROOT = path.dirname(import.meta.dirname);

/** A hash of the files' names (relative to ROOT) and contents; a missing file counts as such. */
export function hashOf(files) {
  const h = crypto.createHash('sha256');
  for (const f of files) {
    h.update(path.relative(ROOT, f));
    h.update(fs.existsSync(f) ? fs.readFileSync(f) : '<missing>');
  }
  return h.digest('hex');
}

/** The stamp a build wrote ({files, hash}), or null. */
export function readStamp(stampFile) {
  try {
    return JSON.parse(fs.readFileSync(stampFile, 'utf8'));
  } catch {
    return null;
  }
}

/** Records what a build was made from. */
export function writeStamp(stampFile, files) {
  const stamp = { files: files.map((f) => path.relative(ROOT, f)), hash: hashOf(files) };
  fs.writeFileSync(stampFile, JSON.stringify(stamp, null, 1));
}

/** True when the stamp is missing or a file it lists (or `files`, when given) changed. */
export function isStale(stampFile, files) {
  const stamp = readStamp(stampFile);
  if (!stamp) return true;
  const list = files ?? stamp.files.map((f) => path.join(ROOT, f));
  return hashOf(list) !== stamp.hash;
}

/** Runs `fn` holding `lockFile` (created exclusively; one older than 5 minutes is a dead process's). */
export async function withLock(lockFile, fn) {
  for (;;) {
    try {
      fs.closeSync(fs.openSync(lockFile, 'wx'));
      break;
    } catch (err) {
      if (err.code !== 'EEXIST') throw err;
      const since = fs.statSync(lockFile, { throwIfNoEntry: false })?.mtimeMs ?? Date.now();
      if (Date.now() - since > 300_000) fs.rmSync(lockFile, { force: true });
      await new Promise((r) => setTimeout(r, 200));
    }
  }
  try {
    return await fn();
  } finally {
    fs.rmSync(lockFile, { force: true });
  }
}
