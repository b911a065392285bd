/**
 * BLEU and ROUGE of an output against its ground truth, computed in code (the `bleu` and `rouge`
 * presets). Tokens are lower-cased words and punctuation marks.
 */

function tokens(text: string): string[] {
  return text.toLowerCase().match(/[\p{L}\p{N}]+|[^\s\p{L}\p{N}]/gu) ?? [];
}

function ngrams(t: string[], n: number): Map<string, number> {
  const m = new Map<string, number>();
  for (let i = 0; i + n <= t.length; i++) {
    const k = t.slice(i, i + n).join('\u0000');
    m.set(k, (m.get(k) ?? 0) + 1);
  }
  return m;
}

/**
 * Sentence BLEU (up to 4-grams, uniform weights, brevity penalty), with add-one smoothing of the
 * higher orders (Lin and Och's smoothing 2) so one missing 4-gram does not zero a short answer.
 * 0..1.
 */
export function bleu(candidate: string, reference: string): number {
  const c = tokens(candidate);
  const r = tokens(reference);
  if (!c.length || !r.length) return 0;
  const orders = Math.min(4, c.length);
  let logSum = 0;
  for (let n = 1; n <= orders; n++) {
    const cand = ngrams(c, n);
    const ref = ngrams(r, n);
    let match = 0;
    let total = 0;
    for (const [k, cnt] of cand) {
      match += Math.min(cnt, ref.get(k) ?? 0);
      total += cnt;
    }
    const p = n === 1 ? match / total : (match + 1) / (total + 1);
    if (p === 0) return 0;
    logSum += Math.log(p) / orders;
  }
  const bp = c.length >= r.length ? 1 : Math.exp(1 - r.length / c.length);
  return bp * Math.exp(logSum);
}

/** ROUGE-1 F1: unigram overlap of output and reference. 0..1. */
export function rouge(candidate: string, reference: string): number {
  const c = ngrams(tokens(candidate), 1);
  const r = ngrams(tokens(reference), 1);
  let overlap = 0;
  let nc = 0;
  let nr = 0;
  for (const [k, cnt] of c) {
    overlap += Math.min(cnt, r.get(k) ?? 0);
    nc += cnt;
  }
  for (const cnt of r.values()) nr += cnt;
  if (!overlap) return 0;
  const precision = overlap / nc;
  const recall = overlap / nr;
  return (2 * precision * recall) / (precision + recall);
}
