import { type FormEvent, useState } from 'react';
import { useParams } from 'react-router';
import { Crumbs } from '../components/Crumbs.tsx';
import { ErrorNote, Loading } from '../components/ErrorNote.tsx';
import { apiResponse, get, post } from '../lib/api.ts';
import {
  type Dataset,
  type DatasetContent,
  type DatasetRow,
  type DatasetValue,
  type DatasetVersion,
  type VersionDiff,
  DIFF_LIMIT,
  can,
  cellText,
  diffVersions,
} from '../lib/datasets-api.ts';
import { formatCount, formatTime } from '../lib/format.ts';
import { useApi } from '../lib/use-api.ts';
import './datasets.css';

const PAGE = 50;

/** Text typed into a cell as the value to store: JSON objects and numbers where the old value was one. */
function typedValue(text: string, old: DatasetValue | undefined): DatasetValue {
  if (text === '' && (old === null || old === undefined)) return null;
  if (typeof old === 'number' && text.trim() !== '' && Number.isFinite(Number(text))) return Number(text);
  if (typeof old === 'object' && old !== null) {
    try {
      const v = JSON.parse(text);
      if (v && typeof v === 'object' && !Array.isArray(v)) return v;
    } catch {
      // Not JSON any more: kept as the text typed.
    }
  }
  return text;
}

/** One row of the table, editable in place (one version per save). */
function RowView({
  row,
  columns,
  editable,
  save,
}: {
  row: DatasetRow;
  columns: string[];
  editable: boolean;
  save: (edit: object) => Promise<void>;
}) {
  const [editing, setEditing] = useState(false);
  const [error, setError] = useState<string | null>(null);
  async function submit(e: FormEvent<HTMLFormElement>) {
    e.preventDefault();
    const data = new FormData(e.currentTarget);
    const values: Record<string, DatasetValue> = {};
    for (const c of columns) {
      const text = String(data.get(c) ?? '');
      if (text !== cellText(row.values_dict[c])) values[c] = typedValue(text, row.values_dict[c]);
    }
    setError(null);
    try {
      if (Object.keys(values).length) await save({ edit_type: 'update_row', row_id: row.row_id, values });
      setEditing(false);
    } catch (err) {
      setError((err as Error).message);
    }
  }
  if (editing)
    return (
      <tr className="row-editing">
        <td className="num">{row.index + 1}</td>
        <td colSpan={columns.length + 1}>
          <form className="row-edit" onSubmit={submit} aria-label={`Edit row ${row.index + 1}`}>
            {columns.map((c) => (
              <label key={c} className="field">
                <span>{c}</span>
                <textarea name={c} defaultValue={cellText(row.values_dict[c])} rows={2} />
              </label>
            ))}
            <div className="row-actions">
              <button type="submit" className="button small primary">
                Save
              </button>
              <button type="button" className="button small ghost" onClick={() => setEditing(false)}>
                Cancel
              </button>
            </div>
            {error && (
              <p className="form-error" role="alert">
                {error}
              </p>
            )}
          </form>
        </td>
      </tr>
    );
  return (
    <tr>
      <td className="num">{row.index + 1}</td>
      {columns.map((c) => (
        <td key={c} className="cell-text">
          {cellText(row.values_dict[c])}
        </td>
      ))}
      <td>
        {editable && (
          <div className="row-actions">
            <button
              type="button"
              className="button small ghost"
              aria-label={`Edit row ${row.index + 1}`}
              onClick={() => setEditing(true)}
            >
              Edit
            </button>
            <button
              type="button"
              className="button small ghost"
              aria-label={`Delete row ${row.index + 1}`}
              onClick={() =>
                save({ edit_type: 'delete_row', row_id: row.row_id }).catch((e) => setError(e.message))
              }
            >
              Delete
            </button>
          </div>
        )}
        {error && !editing && (
          <p className="form-error" role="alert">
            {error}
          </p>
        )}
      </td>
    </tr>
  );
}

function DiffView({ diff, a, b }: { diff: VersionDiff; a: number; b: number }) {
  const line = (r: DatasetRow) =>
    Object.entries(r.values_dict)
      .map(([k, v]) => `${k}: ${cellText(v)}`)
      .join(' · ');
  return (
    <section className="dataset-diff" aria-label={`Changes from version ${a} to version ${b}`}>
      <p className="muted">
        {diff.added.length} added, {diff.removed.length} removed, {diff.changed.length} edited
        {!diff.complete && ` (among the first ${formatCount(DIFF_LIMIT)} rows of each version)`}
      </p>
      <ul className="diff-list">
        {diff.added.map((r) => (
          <li key={`a${r.row_id}`} className="diff-added">
            <strong>+</strong> {line(r)}
          </li>
        ))}
        {diff.removed.map((r) => (
          <li key={`r${r.row_id}`} className="diff-removed">
            <strong>−</strong> {line(r)}
          </li>
        ))}
        {diff.changed.map(({ before, after, columns }) => (
          <li key={`c${after.row_id}`} className="diff-changed">
            <strong>~</strong> row {after.index + 1}:{' '}
            {columns.map((c) => (
              <span key={c} className="diff-cell">
                {c}: <del>{cellText(before.values_dict[c])}</del> →{' '}
                <ins>{cellText(after.values_dict[c])}</ins>
              </span>
            ))}
          </li>
        ))}
      </ul>
    </section>
  );
}

/** The versions of a dataset with their counts, and the rows that differ between two of them. */
function Versions({ id, versions }: { id: string; versions: DatasetVersion[] }) {
  const latest = versions[0]?.version_index ?? 1;
  const [pair, setPair] = useState<[number, number]>([Math.max(1, latest - 1), latest]);
  const [diff, setDiff] = useState<{ a: number; b: number; diff: VersionDiff } | null>(null);
  const [error, setError] = useState<string | null>(null);
  async function compare(e: FormEvent) {
    e.preventDefault();
    setError(null);
    try {
      setDiff({ a: pair[0], b: pair[1], diff: await diffVersions(id, pair[0], pair[1]) });
    } catch (err) {
      setError((err as Error).message);
    }
  }
  const pick = (i: 0 | 1, label: string) => (
    <label className="field inline">
      <span>{label}</span>
      <select
        value={pair[i]}
        onChange={(e) => {
          const next: [number, number] = [...pair];
          next[i] = Number(e.currentTarget.value);
          setPair(next);
        }}
      >
        {versions.map((v) => (
          <option key={v.version_index} value={v.version_index}>
            {v.version_index}
            {v.name ? ` (${v.name})` : ''}
          </option>
        ))}
      </select>
    </label>
  );
  return (
    <section className="panel" aria-labelledby="versions-title">
      <h2 id="versions-title">Versions</h2>
      <div className="table-wrap">
        <table className="table">
          <thead>
            <tr>
              <th scope="col">Version</th>
              <th scope="col" className="num">
                Rows
              </th>
              <th scope="col" className="num">
                Added
              </th>
              <th scope="col" className="num">
                Removed
              </th>
              <th scope="col" className="num">
                Edited
              </th>
              <th scope="col">Created</th>
            </tr>
          </thead>
          <tbody>
            {versions.map((v) => (
              <tr key={v.version_index}>
                <td>
                  {v.version_index}
                  {v.name && <span className="muted"> {v.name}</span>}
                </td>
                <td className="num">{formatCount(v.num_rows)}</td>
                <td className="num">{formatCount(v.rows_added)}</td>
                <td className="num">{formatCount(v.rows_removed)}</td>
                <td className="num">{formatCount(v.rows_edited)}</td>
                <td className="nowrap">{formatTime(v.created_at)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {versions.length > 1 && (
        <form className="diff-form" onSubmit={compare}>
          {pick(0, 'From version')}
          {pick(1, 'To version')}
          <button type="submit" className="button">
            Compare
          </button>
        </form>
      )}
      {error && (
        <p className="form-error" role="alert">
          {error}
        </p>
      )}
      {diff && <DiffView diff={diff.diff} a={diff.a} b={diff.b} />}
    </section>
  );
}

/** One dataset: its rows in pages (any version; the current one editable), its versions and their diff. */
export function DatasetPage() {
  const { datasetId = '' } = useParams();
  const [offset, setOffset] = useState(0);
  const [version, setVersion] = useState<number | null>(null);
  const [nonce, setNonce] = useState(0);
  const [etag, setEtag] = useState('');
  const ds = useApi(`dataset/${datasetId}/${nonce}`, () => get<Dataset>(`/v2/datasets/${datasetId}`));
  const versions = useApi(`dataset-versions/${datasetId}/${nonce}`, () =>
    post<{ versions: DatasetVersion[] }>(`/v2/datasets/${datasetId}/versions/query?limit=1000`, {
      sort: { name: 'version_index', ascending: false },
    }),
  );
  const content = useApi(`dataset-content/${datasetId}/${version}/${offset}/${nonce}`, async () => {
    const path =
      version === null
        ? `/v2/datasets/${datasetId}/content?starting_token=${offset}&limit=${PAGE}`
        : `/v2/datasets/${datasetId}/versions/${version}/content?starting_token=${offset}&limit=${PAGE}`;
    const r = await apiResponse<DatasetContent>('GET', path);
    if (version === null) setEtag(r.headers.get('etag') ?? '');
    return r.body;
  });
  const editable = version === null && can(ds.data, 'update');
  // Each save sends the ETag of the page read: a change made meanwhile answers 412, not a lost edit.
  const save = async (edit: object) => {
    try {
      await apiResponse(
        'PATCH',
        `/v2/datasets/${datasetId}/content`,
        { edits: [edit] },
        { 'if-match': etag },
      );
    } finally {
      setNonce((n) => n + 1);
    }
  };
  const rows = content.data?.rows ?? [];
  const columns = content.data?.column_names ?? [];
  return (
    <>
      <Crumbs
        items={[
          { label: 'Projects', to: '/' },
          { label: 'Datasets', to: '/datasets' },
          { label: ds.data?.name ?? '…' },
        ]}
      />
      <div className="page-head">
        <h1>{ds.data?.name ?? 'Dataset'}</h1>
        {ds.data && (
          <span className="muted">
            {formatCount(ds.data.num_rows)} rows · version {ds.data.current_version_index} · used in{' '}
            {formatCount(ds.data.project_count)} project{ds.data.project_count === 1 ? '' : 's'}
          </span>
        )}
      </div>
      {ds.error && <ErrorNote error={ds.error} retry={ds.reload} />}
      <section aria-label="Rows">
        <div className="dataset-toolbar">
          <label className="field inline">
            <span>Version shown</span>
            <select
              value={version ?? ''}
              onChange={(e) => {
                setVersion(e.currentTarget.value === '' ? null : Number(e.currentTarget.value));
                setOffset(0);
              }}
            >
              <option value="">Current ({ds.data?.current_version_index ?? '…'})</option>
              {versions.data?.versions.map((v) => (
                <option key={v.version_index} value={v.version_index}>
                  {v.version_index}
                  {v.name ? ` (${v.name})` : ''}
                </option>
              ))}
            </select>
          </label>
          {version !== null && <span className="muted small">An earlier version is read only.</span>}
        </div>
        {content.error && <ErrorNote error={content.error} retry={content.reload} />}
        {!content.data && !content.error && <Loading what="the rows" />}
        {content.data && rows.length === 0 && <p className="muted">This version has no rows.</p>}
        {rows.length > 0 && (
          <div className="table-wrap">
            <table className="table dataset-rows">
              <thead>
                <tr>
                  <th scope="col" className="num">
                    #
                  </th>
                  {columns.map((c) => (
                    <th key={c} scope="col">
                      {c}
                    </th>
                  ))}
                  <th scope="col">
                    <span className="visually-hidden">Actions</span>
                  </th>
                </tr>
              </thead>
              <tbody>
                {rows.map((r) => (
                  <RowView key={r.row_id} row={r} columns={columns} editable={editable} save={save} />
                ))}
              </tbody>
            </table>
          </div>
        )}
        <div className="pager">
          <span className="muted" aria-live="polite">
            Rows {formatCount(rows.length ? offset + 1 : 0)}–{formatCount(offset + rows.length)}
          </span>
          <button
            type="button"
            className="button"
            disabled={offset === 0}
            onClick={() => setOffset(Math.max(0, offset - PAGE))}
          >
            Previous
          </button>
          <button
            type="button"
            className="button"
            disabled={content.data?.next_starting_token == null}
            onClick={() => setOffset(offset + PAGE)}
          >
            Next
          </button>
        </div>
      </section>
      {versions.data && <Versions id={datasetId} versions={versions.data.versions} />}
    </>
  );
}
