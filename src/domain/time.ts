/** Timestamps are epoch microseconds internally; the API speaks RFC 3339. */
import { type Loc, ValidationError } from './errors.ts';

export function nowUs(): number {
  return Date.now() * 1000;
}

const DAY_MS = 86_400_000;
/** `YYYY-MM-DDT` of recent days (answers list many timestamps of a few days). */
const dayPrefixes = new Map<number, string>();
const pad2 = (n: number) => (n < 10 ? `0${n}` : `${n}`);
const pad3 = (n: number) => (n < 10 ? `00${n}` : n < 100 ? `0${n}` : `${n}`);

/**
 * RFC 3339 in UTC, as Date.toISOString writes it (milliseconds always); microseconds are kept when
 * present. The date part comes from a small cache, the time of day from arithmetic: answers format
 * thousands of timestamps, and toISOString is the costly part.
 */
export function toIso(us: number): string {
  const ms = Math.floor(us / 1000);
  const day = Math.floor(ms / DAY_MS);
  let prefix = dayPrefixes.get(day);
  if (prefix === undefined) {
    prefix = new Date(day * DAY_MS).toISOString().slice(0, -13);
    if (dayPrefixes.size >= 4096) dayPrefixes.clear();
    dayPrefixes.set(day, prefix);
  }
  let t = ms - day * DAY_MS;
  const milli = t % 1000;
  t = (t - milli) / 1000;
  const sec = t % 60;
  t = (t - sec) / 60;
  const min = t % 60;
  const hour = (t - min) / 60;
  const micros = us - ms * 1000;
  const frac = micros === 0 ? pad3(milli) : `${pad3(milli)}${pad3(micros)}`;
  return `${prefix}${pad2(hour)}:${pad2(min)}:${pad2(sec)}.${frac}Z`;
}

const RFC3339 =
  /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(Z|z|[+-]\d{2}:?\d{2})?$/;

/**
 * Parses an RFC 3339 date-time (a missing offset means UTC, as the hosted API accepts) into epoch
 * microseconds; null when the text is not a valid date-time.
 */
export function parseTimestamp(text: string): number | null {
  const m = RFC3339.exec(text);
  if (!m) return null;
  const [, y, mo, d, h, mi, s, frac, zone] = m;
  const ms = Date.UTC(+y, +mo - 1, +d, +h, +mi, +s);
  const check = new Date(ms);
  if (
    Number.isNaN(ms) ||
    check.getUTCDate() !== +d ||
    check.getUTCMonth() !== +mo - 1 ||
    +h > 23 ||
    +mi > 59 ||
    +s > 59
  ) {
    return null;
  }
  let offsetMin = 0;
  if (zone && zone !== 'Z' && zone !== 'z') {
    const sign = zone[0] === '-' ? -1 : 1;
    const digits = zone.slice(1).replace(':', '');
    offsetMin = sign * (Number(digits.slice(0, 2)) * 60 + Number(digits.slice(2)));
  }
  const micros = frac ? Number(frac.padEnd(6, '0').slice(0, 6)) : 0;
  return (ms - offsetMin * 60_000) * 1000 + micros;
}

/** A date-time a client sent, in epoch microseconds; a 422 at `loc` when it is not one. */
export function timestampAt(text: string, loc: Loc): number {
  const us = parseTimestamp(text);
  if (us === null)
    throw new ValidationError({
      loc,
      msg: 'Input should be a valid datetime',
      type: 'datetime_parsing',
      input: text,
    });
  return us;
}
