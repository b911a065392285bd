import { useMemo, useRef } from 'react';
import type { DashboardData, Widget } from '../lib/api-types.ts';
import { type WidgetSeries, colourOf, formatTicks, formatValue, groupLabel } from '../lib/dashboard-view.ts';
import { useRowWindow } from '../lib/use-row-window.ts';
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
 * attribute (data-values on the legend and on a table's group headings, data-value on numbers and
 * on the cells in view) for tests and tools.
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
      ticks={(values) => formatTicks(widget.metric, widget.aggregation, values)}
      label={`${widget.name}: ${widget.aggregation} of ${widget.metric} per ${data.interval_mins} minutes`}
      onPoint={(bucket, s) => onPoint(data.buckets[bucket], series[s]?.group ?? null)}
    />
  );
}

/** A table row's height (.table.compact); rows are one line. */
const ROW_PX = 25;

/**
 * Buckets by groups, with the whole range first. Only the rows in view (and a few around) are in the
 * page: a dashboard may have up to 10,000 buckets. Every value is on its group's column heading
 * (data-values, data-total), as on a chart's legend.
 */
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
  const box = useRef<HTMLDivElement>(null);
  // The heading and the whole range's row sit above the buckets' rows.
  const { start, end } = useRowWindow(box, data.buckets.length, ROW_PX, { offset: 2 * ROW_PX });
  const above = start * ROW_PX;
  const below = (data.buckets.length - end) * ROW_PX;
  const spacer = (height: number) =>
    height > 0 && (
      <tr className="spacer-row" style={{ height }}>
        <td colSpan={series.length + 1} />
      </tr>
    );
  return (
    <div className="widget-table" ref={box}>
      <table className="table compact" aria-rowcount={data.buckets.length + 2}>
        <thead>
          <tr aria-rowindex={1}>
            <th scope="col">Bucket</th>
            {series.map((s) => (
              <th
                scope="col"
                key={groupLabel(s.group)}
                className="num"
                data-group={groupLabel(s.group)}
                data-values={JSON.stringify(s.values)}
                data-total={s.total === null ? '' : String(s.total)}
              >
                {data.group_by ? groupLabel(s.group) : 'Value'}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          <tr className="total-row" aria-rowindex={2}>
            <th scope="row">Whole range</th>
            {series.map((s) => (
              <td key={groupLabel(s.group)} className="num" data-value={s.total ?? ''}>
                <a href={hrefOf(null, s.group)}>{fmt(s.total)}</a>
              </td>
            ))}
          </tr>
          {spacer(above)}
          {data.buckets.slice(start, end).map((b, k) => {
            const i = start + k;
            return (
              <tr key={b} aria-rowindex={i + 3}>
                <th scope="row">{BUCKET_TIME.format(b * 1000)}</th>
                {series.map((s) => (
                  <td key={groupLabel(s.group)} className="num" data-value={s.values[i] ?? ''}>
                    {s.values[i] === null ? '–' : <a href={hrefOf(b, s.group)}>{fmt(s.values[i])}</a>}
                  </td>
                ))}
              </tr>
            );
          })}
          {spacer(below)}
        </tbody>
      </table>
    </div>
  );
}
