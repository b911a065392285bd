import crypto from 'node:crypto';

const VERSION = 'v1';
const NONCE_BYTES = 12;
const TAG_BYTES = 16;

/** A sealed value that does not open: wrong key, wrong associated data, or altered bytes. */
export class SecretBoxError extends Error {}

/**
 * Authenticated encryption of small secrets (provider tokens) with AES-256-GCM. A sealed value is
 * `v1.` + base64url(12-byte random nonce | ciphertext | 16-byte tag). The associated data (for
 * example the integration id) is authenticated but not stored, so a sealed value copied onto another
 * row does not open there.
 */
export class SecretBox {
  private readonly key: Buffer;
  /** A fingerprint of the key (not the key): tells which key sealed a value, e.g. during rotation. */
  readonly keyId: string;

  constructor(key: Buffer) {
    if (key.length !== 32) throw new Error('SecretBox needs a 32-byte key');
    this.key = Buffer.from(key);
    this.keyId = crypto.createHmac('sha256', this.key).update('spanbase:key-id').digest('hex').slice(0, 16);
  }

  seal(plaintext: string, associatedData: string): string {
    const nonce = crypto.randomBytes(NONCE_BYTES);
    const cipher = crypto.createCipheriv('aes-256-gcm', this.key, nonce, { authTagLength: TAG_BYTES });
    cipher.setAAD(Buffer.from(associatedData, 'utf8'));
    const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    const tag = cipher.getAuthTag();
    return `${VERSION}.${Buffer.concat([nonce, body, tag]).toString('base64url')}`;
  }

  open(sealed: string, associatedData: string): string {
    const dot = sealed.indexOf('.');
    if (dot < 0 || sealed.slice(0, dot) !== VERSION) throw new SecretBoxError('Unknown sealed format');
    const raw = Buffer.from(sealed.slice(dot + 1), 'base64url');
    if (raw.length < NONCE_BYTES + TAG_BYTES) throw new SecretBoxError('Sealed value is too short');
    const nonce = raw.subarray(0, NONCE_BYTES);
    const tag = raw.subarray(raw.length - TAG_BYTES);
    const body = raw.subarray(NONCE_BYTES, raw.length - TAG_BYTES);
    const decipher = crypto.createDecipheriv('aes-256-gcm', this.key, nonce, { authTagLength: TAG_BYTES });
    decipher.setAAD(Buffer.from(associatedData, 'utf8'));
    decipher.setAuthTag(tag);
    try {
      return Buffer.concat([decipher.update(body), decipher.final()]).toString('utf8');
    } catch {
      throw new SecretBoxError('Sealed value does not open with this key');
    }
  }
}
