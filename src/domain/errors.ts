/** Errors the services raise; http/errors.ts maps them to status codes and JSON bodies. */

export type Loc = (string | number)[];

export interface ErrorItem {
  loc: Loc;
  msg: string;
  type: string;
  input?: unknown;
  ctx?: Record<string, unknown>;
}

/** A request that fails a rule the schema cannot express: answered 422 with `detail[]`. */
export class ValidationError extends Error {
  readonly items: ErrorItem[];
  constructor(items: ErrorItem[] | ErrorItem) {
    const list = Array.isArray(items) ? items : [items];
    super(list.map((i) => `${i.loc.join('.')}: ${i.msg}`).join('; '));
    this.items = list;
  }
}

/** A fault answered with a status and `{ detail: "..." }`. */
export class HttpError extends Error {
  constructor(
    readonly statusCode: number,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }
}

export const notFound = (what: string) => new HttpError(404, `${what} not found`);
export const forbidden = (why = 'You do not have permission to do this') => new HttpError(403, why);
export const conflict = (why: string) => new HttpError(409, why);
export const unauthorized = (why = 'Not authenticated') =>
  new HttpError(401, why, { 'www-authenticate': 'Bearer' });

/** One 422 item for a cross-field rule. */
export function valueError(loc: Loc, msg: string, input?: unknown): ValidationError {
  return new ValidationError({ loc, msg, type: 'value_error', ...(input === undefined ? {} : { input }) });
}
