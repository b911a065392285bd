/** A collapsible JSON viewer: objects and arrays fold (open to `openDepth`), scalars are coloured by type. */
export function JsonView({ value, openDepth = 2 }: { value: unknown; openDepth?: number }) {
  return (
    <div className="json">
      <JsonNode value={value} depth={0} openDepth={openDepth} />
    </div>
  );
}

function Scalar({ value }: { value: unknown }) {
  if (value === null) return <span className="j-null">null</span>;
  if (typeof value === 'string') return <span className="j-str">{JSON.stringify(value)}</span>;
  if (typeof value === 'number') return <span className="j-num">{String(value)}</span>;
  if (typeof value === 'boolean') return <span className="j-bool">{String(value)}</span>;
  return <span>{String(value)}</span>;
}

function JsonNode({
  value,
  depth,
  openDepth,
  name,
}: {
  value: unknown;
  depth: number;
  openDepth: number;
  name?: string;
}) {
  const label = name !== undefined ? <span className="j-key">{JSON.stringify(name)}: </span> : null;
  if (value === null || typeof value !== 'object') {
    return (
      <div className="j-line">
        {label}
        <Scalar value={value} />
      </div>
    );
  }
  const entries = Array.isArray(value) ? value.map((v, i) => [String(i), v] as const) : Object.entries(value);
  const [open, close] = Array.isArray(value) ? ['[', ']'] : ['{', '}'];
  if (entries.length === 0) {
    return (
      <div className="j-line">
        {label}
        {open}
        {close}
      </div>
    );
  }
  return (
    <details open={depth < openDepth} className="j-fold">
      <summary>
        {label}
        {open}
        <span className="j-count">
          {entries.length} {Array.isArray(value) ? 'item' : 'key'}
          {entries.length === 1 ? '' : 's'}
        </span>
      </summary>
      <div className="j-children">
        {entries.map(([k, v]) => (
          <JsonNode
            key={k}
            name={Array.isArray(value) ? undefined : k}
            value={v}
            depth={depth + 1}
            openDepth={openDepth}
          />
        ))}
      </div>
      <div className="j-line">{close}</div>
    </details>
  );
}
