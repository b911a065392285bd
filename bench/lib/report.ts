/** What the browser benches print: percentiles of timings, and the gzipped size of a served file. */
import http from 'node:http';

export const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * (s.length - 1)))];
};
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
