import crypto from 'node:crypto';
import type { Config } from '../config.ts';
import { ValidationError } from '../domain/errors.ts';
import { nowUs } from '../domain/time.ts';
import type { ConsoleSessionsRepo } from '../store/console-sessions.ts';
import type { UserRow } from '../store/users.ts';
import { type AuthService, type Caller, toCaller } from './auth.ts';
import type { Keyring } from './keyring.ts';

const TOKEN_PREFIX = 'sbs_';

export interface ConsoleSignIn {
  email?: string;
  password?: string;
  api_key?: string;
}

export interface OpenedSession {
  /** The cookie's value: shown to the browser once, stored only as a hash. */
  token: string;
  /** What state-changing requests made with the cookie must echo in `X-CSRF-Token`. */
  csrfToken: string;
  /** Epoch microseconds. */
  expiresAt: number;
  user: Caller;
}

const sha256 = (text: string) => crypto.createHash('sha256').update(text).digest('hex');

/**
 * Browser sessions of the web console: signing in with a password or an API key (through the same
 * checks and throttling as the API's logins) opens a server-side session that a cookie names;
 * signing out deletes it. The CSRF token is an HMAC of the session token, so it needs no storage
 * and cannot be made without the cookie's value.
 */
export class ConsoleSessionsService {
  private readonly csrfKey: Buffer;

  constructor(
    private readonly sessions: ConsoleSessionsRepo,
    private readonly auth: AuthService,
    private readonly config: Config,
    keyring: Keyring,
  ) {
    this.csrfKey = keyring.derive('console-csrf');
  }

  async signIn(body: ConsoleSignIn, ip: string): Promise<OpenedSession> {
    const user = await this.checkCredentials(body, ip);
    const token = TOKEN_PREFIX + crypto.randomBytes(32).toString('base64url');
    const now = nowUs();
    const expiresAt = now + this.config.consoleSessionTtlSeconds * 1_000_000;
    await this.sessions.deleteExpired(now);
    await this.sessions.insert({
      token_hash: sha256(token),
      user_id: user.id,
      created_at: now,
      expires_at: expiresAt,
    });
    return { token, csrfToken: this.csrfFor(token), expiresAt, user: toCaller(user) };
  }

  private checkCredentials(body: ConsoleSignIn, ip: string): Promise<UserRow> {
    if (body.api_key !== undefined) {
      if (body.email !== undefined || body.password !== undefined) {
        throw new ValidationError({
          loc: ['body'],
          msg: 'Value error, give either api_key or email and password, not both',
          type: 'value_error',
        });
      }
      return this.auth.loginWithApiKey(body.api_key, ip);
    }
    for (const field of ['email', 'password'] as const) {
      if (body[field] === undefined)
        throw new ValidationError({ loc: ['body', field], msg: 'Field required', type: 'missing' });
    }
    return this.auth.loginWithPassword(body.email!, body.password!, ip);
  }

  /** The signed-in user of a session token, or undefined when it is unknown, expired or signed out. */
  async authenticate(token: string): Promise<Caller | undefined> {
    if (!token.startsWith(TOKEN_PREFIX) || token.length > 128) return undefined;
    const user = await this.sessions.userOf(sha256(token), nowUs());
    return user && toCaller(user);
  }

  csrfFor(token: string): string {
    return crypto.createHmac('sha256', this.csrfKey).update(token).digest('base64url');
  }

  csrfMatches(token: string, given: string): boolean {
    const want = Buffer.from(this.csrfFor(token));
    const got = Buffer.from(given);
    return got.length === want.length && crypto.timingSafeEqual(got, want);
  }

  async signOut(token: string): Promise<void> {
    await this.sessions.delete(sha256(token));
  }
}
