import { Link, useNavigate } from 'react-router';
import type { ApiRecord, Column } from '../lib/api-types.ts';
import { cellClass, cellText, cellValue, columnTitle, isNumericColumn } from '../lib/cells.ts';
import type { Failures } from '../lib/failures.ts';
import type { Sort } from '../lib/list-view.ts';
import { preview } from '../lib/messages.ts';
import { KindIcon } from './KindIcon.tsx';

function Cell({
  record,
  id,
  column,
  failure,
}: {
  record: ApiRecord;
  id: string;
  column: Column | undefined;
  failure: number | null | undefined;
}) {
  const value = cellValue(record, id);
  // A session without a name is known by its first input.
  if (id === 'name' && record.type === 'session' && !value) {
    return (
      <span className="clip muted" title="The session's first input (it has no name)">
        {preview(record.input, 80, 'user')}
      </span>
    );
  }
  if (id === 'type' && typeof value === 'string') {
    return (
      <span className="type-cell">
        <KindIcon type={value} /> {value}
      </span>
    );
  }
  if (id === 'tags' && Array.isArray(value)) {
    return (
      <span className="tags">
        {value.map((t) => (
          <span key={String(t)} className="tag">
            {String(t)}
          </span>
        ))}
      </span>
    );
  }
  if (id === 'status_code' && typeof value === 'number') {
    return <span className={value >= 400 ? 'status bad' : 'status'}>{value}</span>;
  }
  if (id === 'status_code' && failure !== undefined) {
    return (
      <span className="status bad" title="A span of this trace failed">
        {failure === null ? 'error' : `span ${failure}`}
      </span>
    );
  }
  const text = cellText(value, id, column);
  return id === 'input' || id === 'output' ? <span className="clip">{text}</span> : text;
}

/**
 * One page of records. Sortable headers are buttons (aria-sort says the order); each row opens its
 * record, by click anywhere on it or by the link in its first cell (keyboard).
 */
export function RecordTable({
  records,
  columnIds,
  catalogue,
  sort,
  onSort,
  hrefOf,
  label,
  failures,
  selection,
}: {
  records: ApiRecord[];
  /** Rows picked with their checkboxes (for an annotation queue); no checkboxes without it. */
  selection?: { selected: ReadonlySet<string>; set: (ids: string[], on: boolean) => void };
  /** Records that failed (a trace also when one of its spans did), with the status to show. */
  failures?: Failures;
  columnIds: string[];
  catalogue: Map<string, Column>;
  sort: Sort | null;
  onSort: (sort: Sort | null) => void;
  hrefOf: (record: ApiRecord, index: number) => string;
  label: string;
}) {
  const navigate = useNavigate();
  const nextSort = (id: string): Sort | null => {
    if (sort?.name !== id) return { name: id, ascending: true };
    return sort.ascending ? { name: id, ascending: false } : null;
  };
  return (
    <div className="table-wrap">
      <table className="table records" aria-label={label}>
        <thead>
          <tr>
            {selection && (
              <th scope="col" className="pick-col">
                <input
                  type="checkbox"
                  aria-label="Select every row of the page"
                  checked={records.length > 0 && records.every((r) => selection.selected.has(r.id))}
                  onChange={(e) =>
                    selection.set(
                      records.map((r) => r.id),
                      e.currentTarget.checked,
                    )
                  }
                />
              </th>
            )}
            <th scope="col" className="open-col">
              <span className="visually-hidden">Open</span>
            </th>
            {columnIds.map((id) => {
              const column = catalogue.get(id);
              const title = columnTitle(column, id);
              const sorted = sort?.name === id ? (sort.ascending ? 'ascending' : 'descending') : 'none';
              return (
                <th
                  key={id}
                  scope="col"
                  aria-sort={sorted}
                  className={isNumericColumn(column, id) ? 'num' : undefined}
                >
                  {column?.sortable ? (
                    <button type="button" className="sort" onClick={() => onSort(nextSort(id))}>
                      {title}
                      <span aria-hidden="true" className="sort-mark">
                        {sorted === 'ascending' ? '▲' : sorted === 'descending' ? '▼' : '↕'}
                      </span>
                    </button>
                  ) : (
                    title
                  )}
                </th>
              );
            })}
          </tr>
        </thead>
        <tbody>
          {records.map((r, i) => {
            const href = hrefOf(r, i);
            return (
              <tr
                key={r.id}
                onClick={(e) => {
                  if ((e.target as HTMLElement).closest('a, button, input, .pick-col')) return;
                  navigate(href);
                }}
              >
                {selection && (
                  <td className="pick-col">
                    <input
                      type="checkbox"
                      aria-label={`Select ${r.type} ${r.name || r.id}`}
                      checked={selection.selected.has(r.id)}
                      onChange={(e) => selection.set([r.id], e.currentTarget.checked)}
                    />
                  </td>
                )}
                <td className="open-col">
                  <Link to={href} aria-label={`Open ${r.type} ${r.name || r.id}`} className="open-link">
                    ›
                  </Link>
                  {failures?.has(r.id) && (
                    <span className="error-mark" title="error" role="img" aria-label="error">
                      !
                    </span>
                  )}
                </td>
                {columnIds.map((id) => (
                  <td key={id} className={cellClass(catalogue.get(id), id)}>
                    <Cell record={r} id={id} column={catalogue.get(id)} failure={failures?.get(r.id)} />
                  </td>
                ))}
              </tr>
            );
          })}
        </tbody>
      </table>
    </div>
  );
}
