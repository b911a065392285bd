import { useMemo } from 'react';
import type { DashboardData, Widget } from '../lib/api-types.ts';
import { type WidgetSeries, colourOf, formatValue, groupLabel } from '../lib/dashboard-view.ts';
import { SeriesChart } from './SeriesChart.tsx';

type Data = DashboardData;

/** A bucket's start as the table shows it (one formatter: toLocaleString makes one per call). */
const BUCKET_TIME = new Intl.DateTimeFormat(undefined, {
  year: 'numeric',
  month: 'numeric',
  day: 'numeric',
  hour: 'numeric',
  minute: 'numeric',
  second: 'numeric',
});

/**
 * One widget's computed data: a line or bar chart per bucket with one series per group, a big
 * number per group, or a table of buckets by groups. Every value is also in the page as a data
 * attribute (data-values on the legend, data-value on numbers and cells) for tests and tools.
 *
 * The links to a group's or a bucket's records are plain anchors (a table has one per cell): the
 * page handles their clicks in one place (lib/use-plain-links.ts).
 */
export function WidgetView({
  widget,
  data,
  series,
  hrefOf,
}: {
  widget: Widget;
  data: Data;
  series: WidgetSeries[];
  /** The record table behind a bucket (null: the whole range) and a group. */
  hrefOf: (bucket: number | null, group: unknown) => string;
}) {
  const fmt = (v: number | null | undefined) => formatValue(widget.metric, widget.aggregation, v);
  if (widget.type === 'number') {
    return (
      <ul className="figures">
        {series.map((s, i) => (
          <li key={groupLabel(s.group)} data-group={groupLabel(s.group)}>
            <output className="figure" data-value={s.total === null ? '' : String(s.total)}>
              {fmt(s.total)}
            </output>
            {data.group_by && (
              <a href={hrefOf(null, s.group)} className="figure-group" style={{ borderColor: colourOf(i) }}>
                {groupLabel(s.group)}
              </a>
            )}
          </li>
        ))}
      </ul>
    );
  }
  if (widget.type === 'table') return <SeriesTable data={data} series={series} fmt={fmt} hrefOf={hrefOf} />;
  return null;
}

/** The legend of a chart: each group with its colour, total and values, linked to its records. */
export function Legend({
  series,
  fmt,
  hrefOf,
  grouped,
}: {
  series: WidgetSeries[];
  fmt: (v: number | null | undefined) => string;
  hrefOf: (bucket: number | null, group: unknown) => string;
  grouped: boolean;
}) {
  return (
    <ul className="legend" aria-label="Series">
      {series.map((s, i) => (
        <li
          key={groupLabel(s.group)}
          data-group={groupLabel(s.group)}
          data-values={JSON.stringify(s.values)}
          data-total={s.total === null ? '' : String(s.total)}
        >
          <span className="swatch" style={{ background: colourOf(i) }} aria-hidden="true" />
          <a href={hrefOf(null, s.group)}>{grouped ? groupLabel(s.group) : 'All records'}</a>
          {s.total !== null && <span className="muted"> {fmt(s.total)}</span>}
        </li>
      ))}
    </ul>
  );
}

export function WidgetChart({
  widget,
  data,
  series,
  onPoint,
}: {
  widget: Widget;
  data: Data;
  series: WidgetSeries[];
  onPoint: (bucket: number, group: unknown) => void;
}) {
  const chartSeries = useMemo(
    () => series.map((s, i) => ({ label: groupLabel(s.group), colour: colourOf(i), values: s.values })),
    [series],
  );
  return (
    <SeriesChart
      buckets={data.buckets}
      bucketSeconds={data.interval_mins * 60}
      series={chartSeries}
      kind={widget.type === 'bar_chart' ? 'bar' : 'line'}
      format={(v) => formatValue(widget.metric, widget.aggregation, v, true)}
      label={`${widget.name}: ${widget.aggregation} of ${widget.metric} per ${data.interval_mins} minutes`}
      onPoint={(bucket, s) => onPoint(data.buckets[bucket], series[s]?.group ?? null)}
    />
  );
}

function SeriesTable({
  data,
  series,
  fmt,
  hrefOf,
}: {
  data: Data;
  series: WidgetSeries[];
  fmt: (v: number | null | undefined) => string;
  hrefOf: (bucket: number | null, group: unknown) => string;
}) {
  const time = (b: number) => BUCKET_TIME.format(b * 1000);
  return (
    <div className="widget-table">
      <table className="table compact">
        <thead>
          <tr>
            <th scope="col">Bucket</th>
            {series.map((s) => (
              <th scope="col" key={groupLabel(s.group)} className="num">
                {data.group_by ? groupLabel(s.group) : 'Value'}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          <tr className="total-row">
            <th scope="row">Whole range</th>
            {series.map((s) => (
              <td key={groupLabel(s.group)} className="num" data-value={s.total ?? ''}>
                <a href={hrefOf(null, s.group)}>{fmt(s.total)}</a>
              </td>
            ))}
          </tr>
          {data.buckets.map((b, i) => (
            <tr key={b}>
              <th scope="row">{time(b)}</th>
              {series.map((s) => (
                <td key={groupLabel(s.group)} className="num" data-value={s.values[i] ?? ''}>
                  {s.values[i] === null ? '–' : <a href={hrefOf(b, s.group)}>{fmt(s.values[i])}</a>}
                </td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
