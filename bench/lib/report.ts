/**
 * What benches print: percentiles of timings, a trend (least-squares slope), and the gzipped size of a
 * served file.
 */
import http from 'node:http';

export const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * (s.length - 1)))];
};
/** Least-squares slope of y over x (0 with fewer than two points or one x). */
export function slope(xs: number[], ys: number[]): number {
  const n = xs.length;
  if (n < 2) return 0;
  const mx = xs.reduce((a, b) => a + b, 0) / n;
  const my = ys.reduce((a, b) => a + b, 0) / n;
  let num = 0;
  let den = 0;
  for (let i = 0; i < n; i++) {
    num += (xs[i] - mx) * (ys[i] - my);
    den += (xs[i] - mx) ** 2;
  }
  return den === 0 ? 0 : num / den;
}

export const ms = (n: number) => `${n.toFixed(0)} ms`;
export const row = (label: string, xs: number[]) =>
  console.log(
    `  ${label.padEnd(48)} p50 ${ms(pct(xs, 50)).padStart(8)}   p95 ${ms(pct(xs, 95)).padStart(8)}`,
  );

/** Bytes of a file as the server sends it gzipped (node:http does not decompress). */
export function gzippedSize(url: string): Promise<number> {
  return new Promise((resolve, reject) => {
    http
      .get(url, { headers: { 'accept-encoding': 'gzip' } }, (res) => {
        if (res.headers['content-encoding'] !== 'gzip') reject(new Error(`${url} was not served gzipped`));
        let n = 0;
        res.on('data', (c: Buffer) => {
          n += c.length;
        });
        res.on('end', () => resolve(n));
        res.on('error', reject);
      })
      .on('error', reject);
  });
}
