/**
 * A record's scores (its `metric_info`, filled by Spanbase's scorers): each scorer's state, value,
 * the judges' explanation and votes, or why it has no score (pending, paused, filtered out, error).
 */
type Info = Record<string, any>;

function valueText(i: Info): string {
  if (i.display_value != null) return String(i.display_value);
  if (Array.isArray(i.value)) return i.value.join(', ');
  return i.value == null ? '' : String(i.value);
}

export function ScoresView({ info }: { info: Record<string, Info> | undefined | null }) {
  const entries = Object.entries(info ?? {});
  if (entries.length === 0) return <p className="muted">No scorers on this run</p>;
  return (
    <ul className="scores">
      {entries.map(([name, i]) => (
        <li key={name} className="score" data-scorer={name}>
          <div className="score-head">
            <strong>{name}</strong>
            <span
              className={`status ${i.status_type === 'success' ? 'ok' : i.status_type === 'error' || i.status_type === 'failed' ? 'bad' : ''}`}
            >
              {i.status_type}
            </span>
            {i.status_type === 'success' && <span className="score-value mono">{valueText(i)}</span>}
            {i.model_alias && <span className="muted small">{i.model_alias}</span>}
            {typeof i.cost === 'number' && <span className="muted small">${i.cost.toFixed(5)}</span>}
          </div>
          {i.message && <p className="muted small">{i.message}</p>}
          {i.explanation && <p className="score-explanation">{i.explanation}</p>}
          {Array.isArray(i.votes) && i.votes.length > 0 && (
            <details className="votes">
              <summary>
                {i.votes.length} judge{i.votes.length === 1 ? '' : 's'}
                {i.abstained ? `, ${i.abstained} abstained` : ''}
              </summary>
              <ol>
                {i.votes.map((v: Info, k: number) => (
                  // biome-ignore lint/suspicious/noArrayIndexKey: votes have no id; their order is the judges'
                  <li key={k}>
                    {v.abstained ? (
                      <span className="muted">abstained: {v.abstained}</span>
                    ) : (
                      <>
                        <span className="mono">
                          {Array.isArray(v.value) ? v.value.join(', ') : String(v.value)}
                        </span>
                        {v.explanation ? ` — ${v.explanation}` : ''}
                      </>
                    )}
                  </li>
                ))}
              </ol>
            </details>
          )}
        </li>
      ))}
    </ul>
  );
}
