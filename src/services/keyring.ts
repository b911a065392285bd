import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { type Config, decodeKey } from '../config.ts';

/**
 * The master secret: SPANBASE_SECRET_KEY, or a random key generated on first start into
 * `<dataDir>/secret.key` (mode 0600). Purpose-specific keys are derived from it with HKDF, so one
 * backed-up value covers token signing and encryption of stored credentials.
 */
export class Keyring {
  private constructor(private readonly master: Buffer) {}

  static load(config: Config): Keyring {
    if (config.secretKey) return new Keyring(decodeKey(config.secretKey)!);
    const file = path.join(config.dataDir, 'secret.key');
    fs.mkdirSync(config.dataDir, { recursive: true, mode: 0o700 });
    try {
      const text = fs.readFileSync(file, 'utf8').trim();
      const key = decodeKey(text);
      if (!key) throw new Error(`${file} does not hold a 32-byte key`);
      return new Keyring(key);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
    const key = crypto.randomBytes(32);
    try {
      // 'wx' fails if another process wrote it first; then read theirs.
      fs.writeFileSync(file, `${key.toString('hex')}\n`, { mode: 0o600, flag: 'wx' });
      return new Keyring(key);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      return new Keyring(decodeKey(fs.readFileSync(file, 'utf8').trim())!);
    }
  }

  static fromBytes(master: Buffer): Keyring {
    return new Keyring(master);
  }

  derive(purpose: string): Buffer {
    return Buffer.from(crypto.hkdfSync('sha256', this.master, Buffer.alloc(0), `spanbase:${purpose}`, 32));
  }
}
