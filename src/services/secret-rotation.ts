import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { type Config, decodeKey } from '../config.ts';
import { SecretBoxError } from '../domain/secretbox.ts';
import type { Store } from '../store/db.ts';
import { IntegrationsRepo } from '../store/integrations.ts';
import { integrationsBox, tokenAad } from './integrations.ts';
import { Keyring } from './keyring.ts';

export class RotationError extends Error {}

/**
 * Re-seals every stored provider token from the current key to the next one, in one transaction:
 * either every token moves or none does. A token already sealed under the next key is left as it is,
 * so an interrupted rotation can be run again with the same next key. A token sealed under neither
 * key stops the rotation (nothing is changed).
 */
export async function resealTokens(
  store: Store,
  current: Keyring,
  next: Keyring,
): Promise<{ resealed: number; already: number }> {
  const from = integrationsBox(current);
  const to = integrationsBox(next);
  const repo = new IntegrationsRepo(store.db, store.dialect);
  return repo.transaction(null, async (tx) => {
    let resealed = 0;
    let already = 0;
    for (const row of await tx.allSealed()) {
      if (row.key_id === to.keyId) {
        already++;
        continue;
      }
      if (row.key_id !== from.keyId) {
        throw new RotationError(
          `integration ${row.id} is sealed under a key that is neither the current nor the new one; nothing was changed`,
        );
      }
      let plain: string;
      try {
        plain = from.open(row.token_ciphertext, tokenAad(row.id));
      } catch (err) {
        if (err instanceof SecretBoxError)
          throw new RotationError(
            `integration ${row.id}: the stored token does not open; nothing was changed`,
          );
        throw err;
      }
      await tx.reseal(row.id, to.seal(plain, tokenAad(row.id)), to.keyId);
      resealed++;
    }
    return { resealed, already };
  });
}

export interface RotationOutcome {
  resealed: number;
  already: number;
  /** Where the new key was written (file mode), or null when SPANBASE_SECRET_KEY must be changed. */
  keyFile: string | null;
  /** The new key in hex, when the operator must install it themselves (environment mode). */
  newKeyHex: string | null;
}

/**
 * `spanbase secrets rotate`: moves stored tokens to a new master key. Run it with every Spanbase
 * process stopped (a running one keeps sealing with the old key).
 *
 * - File mode (no SPANBASE_SECRET_KEY; the key lives in `<dataDir>/secret.key`): the new key is first
 *   written to `secret.key.next` (mode 0600), the tokens are re-sealed in one transaction, then
 *   `secret.key.next` replaces `secret.key` (an atomic rename). Interrupted at any point, running
 *   the command again finishes the job: an existing `secret.key.next` is reused.
 * - Environment mode: the tokens are re-sealed; the operator then sets SPANBASE_SECRET_KEY to the new
 *   key on every process (printed when it was generated here).
 */
export async function rotateSecretKey(
  config: Config,
  store: Store,
  newKeyText: string | undefined,
): Promise<RotationOutcome> {
  const current = Keyring.load(config);
  const given = newKeyText === undefined ? null : decodeKey(newKeyText.trim());
  if (newKeyText !== undefined && !given) {
    throw new RotationError('--new-key must be 32 bytes as 64 hex characters or base64');
  }
  const currentBytes = config.secretKey ? decodeKey(config.secretKey)! : readKeyFile(keyFileOf(config))!;

  if (config.secretKey) {
    const next = given ?? crypto.randomBytes(32);
    if (next.equals(currentBytes)) throw new RotationError('the new key is the current key');
    const counts = await resealTokens(store, current, Keyring.fromBytes(next));
    return { ...counts, keyFile: null, newKeyHex: given ? null : next.toString('hex') };
  }

  const keyFile = keyFileOf(config);
  const nextFile = `${keyFile}.next`;
  let next = readKeyFile(nextFile);
  if (next && given && !next.equals(given)) {
    throw new RotationError(
      `${nextFile} holds another key from an unfinished rotation; run the command again without --new-key to finish it`,
    );
  }
  if (!next) {
    next = given ?? crypto.randomBytes(32);
    if (next.equals(currentBytes)) throw new RotationError('the new key is the current key');
    writeKeyFile(nextFile, next);
  }
  const counts = await resealTokens(store, current, Keyring.fromBytes(next));
  fs.renameSync(nextFile, keyFile);
  fsyncDir(path.dirname(keyFile));
  return { ...counts, keyFile, newKeyHex: null };
}

const keyFileOf = (config: Config) => path.join(config.dataDir, 'secret.key');

function readKeyFile(file: string): Buffer | null {
  try {
    const key = decodeKey(fs.readFileSync(file, 'utf8').trim());
    if (!key) throw new RotationError(`${file} does not hold a 32-byte key`);
    return key;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
}

function writeKeyFile(file: string, key: Buffer): void {
  const fd = fs.openSync(file, 'wx', 0o600);
  try {
    fs.writeSync(fd, `${key.toString('hex')}\n`);
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
  fsyncDir(path.dirname(file));
}

function fsyncDir(dir: string): void {
  let fd: number | null = null;
  try {
    fd = fs.openSync(dir, 'r');
    fs.fsyncSync(fd);
  } catch {
    // Not every platform lets a directory be synced; the rename is still atomic.
  } finally {
    if (fd !== null) fs.closeSync(fd);
  }
}
