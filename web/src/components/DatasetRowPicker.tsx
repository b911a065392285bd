/**
 * "Fill from a dataset row": pick a dataset the caller can read and one of its first rows; the
 * row's columns fill the variables of the same name (a dotted variable, `{{reader.name}}`, reads
 * into an object column). Used by the playground, so a prompt is tried on the inputs it will meet.
 */
import { useState } from 'react';
import { get } from '../lib/api.ts';
import type { Dataset, DatasetContent, DatasetValue } from '../lib/datasets-api.ts';
import { useApi } from '../lib/use-api.ts';

const ROWS_SHOWN = 50;

/** A variable's text from a row: the column of that name, else the path through an object column. */
export function rowVariable(row: Record<string, DatasetValue>, name: string): string | undefined {
  let v: unknown = row[name];
  if (v === undefined) {
    v = row;
    for (const k of name.split('.')) v = v !== null && typeof v === 'object' ? (v as any)[k] : undefined;
  }
  if (v === undefined || v === null) return undefined;
  return typeof v === 'string' ? v : JSON.stringify(v);
}

const preview = (values: Record<string, DatasetValue>) => {
  const text = Object.values(values)
    .map((v) => (typeof v === 'string' ? v : JSON.stringify(v)))
    .join(' · ');
  return text.length > 80 ? `${text.slice(0, 79)}…` : text;
};

export function DatasetRowPicker({
  variables,
  onFill,
}: {
  variables: string[];
  onFill: (values: Record<string, string>) => void;
}) {
  const datasets = useApi('playground/datasets', () =>
    get<{ datasets: Dataset[] }>('/v2/datasets?limit=100').then((r) => r.datasets),
  );
  const [datasetId, setDatasetId] = useState('');
  const rows = useApi(`playground/rows/${datasetId}`, () =>
    datasetId
      ? get<DatasetContent>(`/v2/datasets/${datasetId}/content?limit=${ROWS_SHOWN}`).then((c) => c.rows)
      : Promise.resolve([]),
  );
  const [filled, setFilled] = useState<string | null>(null);

  const pick = (rowId: string) => {
    const row = rows.data?.find((r) => r.row_id === rowId);
    if (!row) return;
    const values: Record<string, string> = {};
    for (const v of variables) {
      const text = rowVariable(row.values_dict, v);
      if (text !== undefined) values[v] = text;
    }
    onFill(values);
    const missing = variables.filter((v) => !(v in values));
    setFilled(
      `Row ${row.index + 1} filled ${Object.keys(values).length} of ${variables.length} variables` +
        (missing.length ? `; no column for ${missing.map((m) => `{{${m}}}`).join(', ')}` : ''),
    );
  };

  if (!datasets.data?.length) return null;
  return (
    <div className="playground-row-picker">
      <label>
        <span>Fill from dataset</span>
        <select
          value={datasetId}
          onChange={(e) => {
            setDatasetId(e.target.value);
            setFilled(null);
          }}
        >
          <option value="">—</option>
          {datasets.data.map((d) => (
            <option key={d.id} value={d.id}>
              {d.name}
            </option>
          ))}
        </select>
      </label>
      {datasetId && (
        <label>
          <span>Row</span>
          <select value="" onChange={(e) => pick(e.target.value)} disabled={!rows.data?.length}>
            <option value="">{rows.data ? 'Pick a row…' : 'Loading rows…'}</option>
            {rows.data?.map((r) => (
              <option key={r.row_id} value={r.row_id}>
                {`${r.index + 1}. ${preview(r.values_dict)}`}
              </option>
            ))}
          </select>
        </label>
      )}
      {filled && (
        <p className="muted" role="status">
          {filled}
        </p>
      )}
    </div>
  );
}
