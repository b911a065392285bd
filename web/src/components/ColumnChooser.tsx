import { useEffect, useState } from 'react';
import type { Column } from '../lib/api-types.ts';

/** Checkboxes over the run's available columns, by group; the order chosen is kept. */
export function ColumnChooser({
  catalogue,
  chosen,
  onChange,
  onReset,
}: {
  catalogue: Column[];
  chosen: string[];
  onChange: (columns: string[]) => void;
  onReset: () => void;
}) {
  const groups = new Map<string, Column[]>();
  for (const c of catalogue) {
    const list = groups.get(c.group_label) ?? [];
    list.push(c);
    groups.set(c.group_label, list);
  }
  // The boxes follow a click at once; the URL (and so `chosen`) follows when the router gets to it.
  const [picked, setPicked] = useState(chosen);
  const chosenKey = chosen.join(',');
  // biome-ignore lint/correctness/useExhaustiveDependencies: chosenKey stands for chosen
  useEffect(() => setPicked(chosen), [chosenKey]);
  const toggle = (id: string, on: boolean) => {
    const next = on ? [...picked.filter((c) => c !== id), id] : picked.filter((c) => c !== id);
    setPicked(next);
    onChange(next);
  };
  return (
    <details className="popover">
      <summary className="button">Columns ({picked.length})</summary>
      <div className="popover-body column-chooser">
        {[...groups].map(([group, columns]) => (
          <fieldset key={group}>
            <legend>{group}</legend>
            {columns.map((c) => (
              <label key={c.id} className="check">
                <input
                  type="checkbox"
                  checked={picked.includes(c.id)}
                  onChange={(e) => toggle(c.id, e.currentTarget.checked)}
                />
                {c.label}
              </label>
            ))}
          </fieldset>
        ))}
        <button type="button" className="button small" onClick={onReset}>
          Reset to default columns
        </button>
      </div>
    </details>
  );
}
