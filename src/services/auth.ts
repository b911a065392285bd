import crypto from 'node:crypto';
import { SignJWT, jwtVerify } from 'jose';
import type { Config } from '../config.ts';
import { HttpError, notFound, unauthorized } from '../domain/errors.ts';
import { newId } from '../domain/ids.ts';
import { hashPassword, verifyPassword } from '../domain/passwords.ts';
import { LoginThrottle } from '../domain/throttle.ts';
import { nowUs, parseTimestamp, toIso } from '../domain/time.ts';
import type { ApiKeyRow, UserRow, UsersRepo } from '../store/users.ts';
import type { Keyring } from './keyring.ts';
import { ACCESS_CACHE_MS } from './access-cache.ts';
import { rejectUnstorable, storableText } from '../domain/text.ts';

/** Who is calling: the user behind the credentials. */
export interface Caller {
  id: string;
  email: string;
  role: 'admin' | 'user';
  first_name: string;
  last_name: string;
}

export function toCaller(u: UserRow): Caller {
  return {
    id: u.id,
    email: u.email,
    role: u.role as Caller['role'],
    first_name: u.first_name,
    last_name: u.last_name,
  };
}

const KEY_PREFIX = 'sb_';

export function hashApiKey(key: string): string {
  return crypto.createHash('sha256').update(key).digest('hex');
}

function tooMany(waitMs: number): HttpError {
  const seconds = Math.ceil(waitMs / 1000);
  const minutes = Math.ceil(seconds / 60);
  const when =
    seconds < 60
      ? `${seconds} second${seconds === 1 ? '' : 's'}`
      : `${minutes} minute${minutes === 1 ? '' : 's'}`;
  return new HttpError(429, `Too many failed login attempts; try again in ${when}`, {
    'retry-after': String(seconds),
  });
}

const KEY_HEADERS = 'the Service-API-Key (or Platform-AO-API-Key, or Galileo-API-Key) header';
/** Appended to a 401 for missing, malformed or unknown credentials. */
const WHERE_CREDENTIALS_GO =
  `Send an API key in ${KEY_HEADERS}, a token from POST /v2/login/api_key (or POST /login) as ` +
  'Authorization: Bearer <token>, or email and password as HTTP Basic.';
const KEY_NOT_KNOWN = 'This API key is not known (check it was copied whole).';
const UNKNOWN_KEY = `${KEY_NOT_KNOWN} ${WHERE_CREDENTIALS_GO}`;
const KEY_AS_BEARER =
  `An API key is not a bearer token: send it in ${KEY_HEADERS}, or exchange it for a bearer token ` +
  'with POST /v2/login/api_key {"api_key": "..."} and send that as Authorization: Bearer <token>.';
const BAD_TOKEN = `The bearer token is invalid or has expired. ${WHERE_CREDENTIALS_GO}`;
const expiredKey = (at: number) => `This API key expired at ${toIso(at)}; create a new one.`;

/** Issues and checks every credential: passwords, API keys and bearer tokens. */
export class AuthService {
  private readonly jwtKey: Uint8Array;
  private readonly throttle = new LoginThrottle();
  /** Recently verified Basic credentials, so each request does not pay for scrypt again. */
  private readonly basicCache = new Map<string, { userId: string; until: number }>();
  /**
   * API keys found valid, by hash, with their user: reused for ACCESS_CACHE_MS unless a key was
   * revoked (or membership changed) through this process since (UsersRepo.generation). Expiry is
   * checked on every use; unknown or revoked keys are never kept.
   */
  private readonly keyCache = new Map<
    string,
    { key: ApiKeyRow; user: UserRow; gen: number; until: number }
  >();

  constructor(
    private readonly users: UsersRepo,
    private readonly config: Config,
    keyring: Keyring,
  ) {
    this.jwtKey = keyring.derive('jwt');
  }

  hashPassword(password: string): Promise<string> {
    return hashPassword(password, this.config.scryptCost);
  }

  /** A new API key for a user: the secret is returned once; only its hash is stored. */
  async createApiKey(userId: string, description: string, expiresAt: string | null | undefined) {
    rejectUnstorable(['body', 'description'], description);
    const secret = KEY_PREFIX + crypto.randomBytes(32).toString('base64url');
    const expires = expiresAt ? parseTimestamp(expiresAt) : null;
    const row: ApiKeyRow = {
      id: newId(),
      user_id: userId,
      description,
      key_hash: hashApiKey(secret),
      key_prefix: secret.slice(0, KEY_PREFIX.length + 6),
      created_at: nowUs(),
      expires_at: expires,
      last_used_at: null,
      revoked_at: null,
    };
    await this.users.insertKey(row);
    return { ...describeKey(row), api_key: secret };
  }

  userByEmail(email: string): Promise<UserRow | undefined> {
    return this.users.byEmail(email);
  }

  async listApiKeys(userId: string) {
    return (await this.users.keysOf(userId)).map(describeKey);
  }

  async revokeApiKey(userId: string, keyId: string): Promise<void> {
    if (!(await this.users.revokeKey(userId, keyId, nowUs()))) throw notFound('API key');
  }

  async issueToken(
    userId: string,
  ): Promise<{ access_token: string; token_type: 'bearer'; expires_in: number }> {
    const token = await new SignJWT({})
      .setProtectedHeader({ alg: 'HS256' })
      .setSubject(userId)
      .setIssuedAt()
      .setExpirationTime(`${this.config.tokenTtlSeconds}s`)
      .sign(this.jwtKey);
    return { access_token: token, token_type: 'bearer', expires_in: this.config.tokenTtlSeconds };
  }

  /** Email and password → user, throttling repeated failures per account and per address. */
  async loginWithPassword(email: string, password: string, ip: string): Promise<UserRow> {
    const keys = [`acct:${email.toLowerCase()}`, `ip:${ip}`];
    const wait = this.throttle.waitFor(keys);
    if (wait > 0) throw tooMany(wait);
    const user = await this.users.byEmail(email);
    const ok = user?.password_hash ? await verifyPassword(password, user.password_hash) : false;
    if (!user || !ok) {
      this.throttle.fail(keys);
      throw unauthorized('Incorrect username or password');
    }
    this.throttle.succeed([keys[0]]);
    return user;
  }

  /** API key → user; throttled per address so keys cannot be guessed quickly. */
  async loginWithApiKey(key: string, ip: string): Promise<UserRow> {
    const keys = [`ip:${ip}`];
    const wait = this.throttle.waitFor(keys);
    if (wait > 0) throw tooMany(wait);
    const found = await this.userForKey(key);
    if ('refused' in found) {
      this.throttle.fail(keys);
      // The key came in a body, not a header: advice about headers would mislead here.
      throw unauthorized(found.refused === UNKNOWN_KEY ? KEY_NOT_KNOWN : found.refused);
    }
    return found.user;
  }

  /** The key's user, or why the key is refused (unknown, revoked or expired). */
  private async userForKey(key: string): Promise<{ user: UserRow } | { refused: string }> {
    if (!key.startsWith(KEY_PREFIX)) return { refused: UNKNOWN_KEY };
    const hash = hashApiKey(key);
    const hit = this.keyCache.get(hash);
    if (hit && hit.until > Date.now() && hit.gen === this.users.generation) {
      const now = nowUs();
      if (hit.key.expires_at !== null && hit.key.expires_at <= now) {
        this.keyCache.delete(hash);
        return { refused: expiredKey(hit.key.expires_at) };
      }
      if (hit.key.last_used_at === null || now - hit.key.last_used_at > 60_000_000) {
        await this.users.touchKey(hit.key.id, now);
        hit.key.last_used_at = now;
      }
      return { user: hit.user };
    }
    this.keyCache.delete(hash);
    // The generation before the reads: a revocation committed while they run makes the entry stale.
    const gen = this.users.generation;
    const row = await this.users.keyByHash(hash);
    const now = nowUs();
    if (!row) return { refused: UNKNOWN_KEY };
    if (row.revoked_at !== null)
      return { refused: `This API key was revoked at ${toIso(row.revoked_at)}; create a new one.` };
    if (row.expires_at !== null && row.expires_at <= now) return { refused: expiredKey(row.expires_at) };
    // Record use at most once a minute per key, to keep reads cheap.
    if (row.last_used_at === null || now - row.last_used_at > 60_000_000) {
      await this.users.touchKey(row.id, now);
      row.last_used_at = now;
    }
    const user = await this.users.byId(row.user_id);
    if (user) {
      if (this.keyCache.size >= 10_000) this.keyCache.clear();
      this.keyCache.set(hash, { key: row, user, gen, until: Date.now() + ACCESS_CACHE_MS });
    }
    return user ? { user } : { refused: UNKNOWN_KEY };
  }

  private async userForToken(token: string): Promise<UserRow | undefined> {
    try {
      const { payload } = await jwtVerify(token, this.jwtKey, { algorithms: ['HS256'] });
      return payload.sub ? await this.users.byId(payload.sub) : undefined;
    } catch {
      return undefined;
    }
  }

  private async userForBasic(encoded: string, ip: string): Promise<UserRow | undefined> {
    const text = Buffer.from(encoded, 'base64').toString('utf8');
    const colon = text.indexOf(':');
    if (colon < 0) return undefined;
    // Decoded bytes are not text checked by any parser: make them storable before the lookup.
    const email = storableText(text.slice(0, colon));
    const password = text.slice(colon + 1);
    const cacheKey = crypto.createHash('sha256').update(text).digest('hex');
    const hit = this.basicCache.get(cacheKey);
    if (hit && hit.until > Date.now()) return this.users.byId(hit.userId);
    const user = await this.loginWithPassword(email, password, ip);
    if (this.basicCache.size > 10_000) this.basicCache.clear();
    this.basicCache.set(cacheKey, { userId: user.id, until: Date.now() + 60_000 });
    return user;
  }

  /**
   * The four schemes of the API; any one suffices. Missing or wrong credentials → 401; where the
   * credentials are missing or malformed, the message says where they go.
   */
  async authenticate(headers: Record<string, string | string[] | undefined>, ip: string): Promise<Caller> {
    const one = (name: string) => {
      const v = headers[name];
      return Array.isArray(v) ? v[0] : v;
    };
    // Galileo-API-Key is what exporters configured for the hosted service send; accept it too.
    const apiKey = one('service-api-key') ?? one('platform-ao-api-key') ?? one('galileo-api-key');
    const authorization = one('authorization');
    let user: UserRow | undefined;
    if (apiKey) {
      const found = await this.userForKey(apiKey.trim());
      if ('refused' in found) throw unauthorized(found.refused);
      user = found.user;
    } else if (authorization) {
      const [scheme, value] = authorization.trim().split(/\s+/, 2);
      if (scheme?.toLowerCase() === 'bearer' && value) {
        if (value.startsWith(KEY_PREFIX)) throw unauthorized(KEY_AS_BEARER);
        user = await this.userForToken(value);
        if (!user) throw unauthorized(BAD_TOKEN);
      } else if (scheme?.toLowerCase() === 'basic' && value) {
        user = await this.userForBasic(value, ip);
      } else {
        throw unauthorized(
          `The Authorization header must be 'Bearer <token>' or 'Basic <credentials>'. ${WHERE_CREDENTIALS_GO}`,
        );
      }
    } else {
      throw unauthorized(`Not authenticated. ${WHERE_CREDENTIALS_GO}`);
    }
    if (!user) throw unauthorized(`Could not validate credentials. ${WHERE_CREDENTIALS_GO}`);
    return toCaller(user);
  }
}

export function describeKey(row: ApiKeyRow) {
  return {
    id: row.id,
    description: row.description,
    key_prefix: row.key_prefix,
    created_at: toIso(row.created_at),
    expires_at: row.expires_at === null ? null : toIso(row.expires_at),
    last_used_at: row.last_used_at === null ? null : toIso(row.last_used_at),
  };
}
