/** Timestamps are epoch microseconds internally; the API speaks RFC 3339. */

export function nowUs(): number {
  return Date.now() * 1000;
}

/** RFC 3339 in UTC; microseconds are kept when present. */
export function toIso(us: number): string {
  const ms = Math.floor(us / 1000);
  const iso = new Date(ms).toISOString();
  const micros = us - ms * 1000;
  if (micros === 0) return iso;
  return `${iso.slice(0, 23)}${String(micros).padStart(3, '0')}Z`;
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
