/** The record kind as a small coloured glyph (colour is never the only cue: the letter and title say it). */
const GLYPH: Record<string, string> = {
  session: 'S',
  trace: 'T',
  agent: 'A',
  workflow: 'W',
  llm: 'L',
  tool: 'F',
  retriever: 'R',
  control: 'C',
  http: 'H',
};

export function KindIcon({ type }: { type: string }) {
  return (
    <span className={`kind kind-${GLYPH[type] ? type : 'other'}`} title={type} role="img" aria-label={type}>
      {GLYPH[type] ?? '?'}
    </span>
  );
}
