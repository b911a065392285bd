/** "1 trace", "2 traces": a count with its noun, singular for exactly one. */
export function counted(n: number, singular: string, plural = `${singular}s`): string {
  return `${n} ${n === 1 ? singular : plural}`;
}
