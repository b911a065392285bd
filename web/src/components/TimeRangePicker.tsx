import { type FormEvent, useId, useState } from 'react';
import { isoToLocalInput, localInputToIso } from '../lib/format.ts';
import { RELATIVE_RANGES, type TimeRange } from '../lib/list-view.ts';

/** All time, a relative range (resolved at each load), or a custom from/to in local time. */
export function TimeRangePicker({ range, onChange }: { range: TimeRange; onChange: (r: TimeRange) => void }) {
  const id = useId();
  const [custom, setCustom] = useState(range.kind === 'absolute');
  const selected = custom ? 'custom' : range.kind === 'relative' ? range.last : 'all';
  const applyCustom = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    const form = new FormData(e.currentTarget);
    onChange({
      kind: 'absolute',
      from: localInputToIso(String(form.get('from') ?? '')),
      to: localInputToIso(String(form.get('to') ?? '')),
    });
  };
  return (
    <div className="time-range">
      <label htmlFor={id} className="visually-hidden">
        Time range
      </label>
      <select
        id={id}
        value={selected}
        onChange={(e) => {
          const v = e.currentTarget.value;
          setCustom(v === 'custom');
          if (v === 'all') onChange({ kind: 'all' });
          else if (v !== 'custom') onChange({ kind: 'relative', last: v });
        }}
      >
        <option value="all">All time</option>
        {Object.entries(RELATIVE_RANGES).map(([k, r]) => (
          <option key={k} value={k}>
            {r.label}
          </option>
        ))}
        <option value="custom">Custom range…</option>
      </select>
      {custom && (
        <form className="custom-range" onSubmit={applyCustom}>
          <label>
            <span>From</span>
            <input
              type="datetime-local"
              name="from"
              defaultValue={range.kind === 'absolute' ? isoToLocalInput(range.from) : ''}
            />
          </label>
          <label>
            <span>To</span>
            <input
              type="datetime-local"
              name="to"
              defaultValue={range.kind === 'absolute' ? isoToLocalInput(range.to) : ''}
            />
          </label>
          <button type="submit" className="button small">
            Apply range
          </button>
        </form>
      )}
    </div>
  );
}
