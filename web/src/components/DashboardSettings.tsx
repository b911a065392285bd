import { type FormEvent, useId, useState } from 'react';
import type { Column, Dashboard } from '../lib/api-types.ts';
import { DASHBOARD_RANGES, INTERVALS, groupableColumns, rangeLabel } from '../lib/dashboard-view.ts';
import type { FieldErrors } from '../lib/field-errors.ts';
import { countConditions, treeToForm } from '../lib/filter-form.ts';
import { isoToLocalInput } from '../lib/format.ts';
import { FieldError, invalidProps } from './FieldError.tsx';
import { FilterBuilder } from './FilterBuilder.tsx';

export const SETTINGS_FIELDS = [
  'relative_time',
  'start_time',
  'end_time',
  'interval_mins',
  'group_by',
  'filter_tree',
];

const toLocal = (epoch: number) => isoToLocalInput(new Date(epoch * 1000).toISOString());
const toEpoch = (local: string) => (local ? Math.floor(new Date(local).getTime() / 1000) : null);

function filterCount(tree: unknown): number {
  if (!tree) return 0;
  try {
    return countConditions(treeToForm(tree as Parameters<typeof treeToForm>[0]));
  } catch {
    return 1;
  }
}

/**
 * The dashboard's time range (relative or absolute), interval, group_by and filter_tree. Each change
 * is saved at once (PUT); what the API refuses is shown beside its control. `readOnly` (a caller
 * below editor) shows them without letting them change.
 */
export function DashboardSettings({
  dashboard,
  columns,
  errors,
  change,
  readOnly = false,
}: {
  dashboard: Dashboard;
  columns: Column[];
  errors: FieldErrors;
  change: (body: Partial<Dashboard>) => void;
  readOnly?: boolean;
}) {
  const id = useId();
  const [custom, setCustom] = useState(dashboard.relative_time === null);
  const [filtersOpen, setFiltersOpen] = useState(false);
  const relative = dashboard.relative_time;
  const ranges =
    relative && !DASHBOARD_RANGES.some(([v]) => v === relative)
      ? [...DASHBOARD_RANGES, [relative, rangeLabel(relative)] as [string, string]]
      : DASHBOARD_RANGES;
  const intervals = INTERVALS.some(([m]) => m === dashboard.interval_mins)
    ? INTERVALS
    : [...INTERVALS, [dashboard.interval_mins, `${dashboard.interval_mins} minutes`] as [number, string]];
  const groupable = groupableColumns(columns);
  const applyCustom = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    const f = new FormData(e.currentTarget);
    change({
      start_time: toEpoch(String(f.get('from') ?? '')),
      end_time: toEpoch(String(f.get('to') ?? '')),
    } as Partial<Dashboard>);
  };
  const err = (field: string) => `${id}-${field}`;
  const filters = filterCount(dashboard.filter_tree);
  return (
    <div className="dashboard-settings">
      <div className="toolbar">
        <label className="inline-field">
          <span>Time range</span>
          <select
            disabled={readOnly}
            value={custom ? 'custom' : (relative ?? 'custom')}
            onChange={(e) => {
              const v = e.currentTarget.value;
              setCustom(v === 'custom');
              if (v !== 'custom') change({ relative_time: v });
            }}
            {...invalidProps(errors, 'relative_time', err('relative_time'))}
          >
            {ranges.map(([v, l]) => (
              <option key={v} value={v}>
                {l}
              </option>
            ))}
            <option value="custom">Custom range…</option>
          </select>
          <FieldError errors={errors} field="relative_time" id={err('relative_time')} />
        </label>
        {custom && (
          <form className="custom-range" onSubmit={applyCustom}>
            <label>
              <span>From</span>
              <input
                disabled={readOnly}
                type="datetime-local"
                name="from"
                defaultValue={relative ? '' : toLocal(dashboard.start_time)}
                {...invalidProps(errors, 'start_time', err('start_time'))}
              />
              <FieldError errors={errors} field="start_time" id={err('start_time')} />
            </label>
            <label>
              <span>To</span>
              <input
                disabled={readOnly}
                type="datetime-local"
                name="to"
                defaultValue={relative ? '' : toLocal(dashboard.end_time)}
                {...invalidProps(errors, 'end_time', err('end_time'))}
              />
              <FieldError errors={errors} field="end_time" id={err('end_time')} />
            </label>
            <button type="submit" className="button small" disabled={readOnly}>
              Apply range
            </button>
          </form>
        )}
        <label className="inline-field">
          <span>Interval</span>
          <select
            disabled={readOnly}
            value={dashboard.interval_mins}
            onChange={(e) => change({ interval_mins: Number(e.currentTarget.value) })}
            {...invalidProps(errors, 'interval_mins', err('interval_mins'))}
          >
            {intervals.map(([m, l]) => (
              <option key={m} value={m}>
                {l}
              </option>
            ))}
          </select>
          <FieldError errors={errors} field="interval_mins" id={err('interval_mins')} />
        </label>
        <label className="inline-field">
          <span>Group by</span>
          <select
            disabled={readOnly}
            value={dashboard.group_by ?? ''}
            onChange={(e) => change({ group_by: e.currentTarget.value || null })}
            {...invalidProps(errors, 'group_by', err('group_by'))}
          >
            <option value="">No grouping</option>
            {dashboard.group_by && !groupable.some((c) => c.id === dashboard.group_by) && (
              <option value={dashboard.group_by}>{dashboard.group_by}</option>
            )}
            {groupable.map((c) => (
              <option key={c.id} value={c.id}>
                {c.label} ({c.id})
              </option>
            ))}
          </select>
          <FieldError errors={errors} field="group_by" id={err('group_by')} />
        </label>
        <button
          type="button"
          className={filtersOpen ? 'button active' : 'button'}
          aria-expanded={filtersOpen}
          aria-controls={`${id}-filters`}
          onClick={() => setFiltersOpen(!filtersOpen)}
        >
          Filters{filters ? ` (${filters})` : ''}
        </button>
      </div>
      <FieldError errors={errors} field="filter_tree" id={err('filter_tree')} />
      {filtersOpen && (
        <div id={`${id}-filters`}>
          <fieldset className="plain" disabled={readOnly}>
            <FilterBuilder
              applied={(dashboard.filter_tree ?? null) as Parameters<typeof FilterBuilder>[0]['applied']}
              columns={columns}
              onApply={(filter) => change({ filter_tree: filter })}
            />
          </fieldset>
        </div>
      )}
    </div>
  );
}
