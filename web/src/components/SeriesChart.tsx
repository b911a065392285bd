/**
 * A time series chart drawn by uPlot: one line (or bar per bucket) per series, the buckets on the
 * x axis. Only the dashboard and token-usage pages import it (they load on demand), so the record
 * pages never download the charting code.
 *
 * The drawn values are not only pixels: the chart's caller lists them in its legend as data
 * attributes, and the chart marks itself data-drawn once uPlot has painted.
 *
 * The chart is made when its box is first laid out (a ResizeObserver's first report), so it is
 * drawn before the browser first paints the data, with no re-render to learn the size and no layout
 * forced per chart.
 */
import { useLayoutEffect, useRef } from 'react';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';

export interface ChartSeries {
  label: string;
  colour: string;
  values: (number | null)[];
}

const PixelPercent = 2 as uPlot.Series.BarsPathBuilderFacetUnit;

/** Bars side by side within each bucket: series `s` of `n` takes its slice of 80 % of the bucket. */
function groupedBars(n: number, s: number, bucketSeconds: number): uPlot.Series.PathBuilder {
  const place = (u: uPlot, which: 'x0' | 'size') => {
    const xs = u.data[0];
    const width = u.bbox.width / uPlot.pxRatio;
    const bucket = (u.valToPos(xs[0] + bucketSeconds, 'x') - u.valToPos(xs[0], 'x')) / width;
    const bar = (bucket * 0.8) / n;
    return Array.from(xs, (x) =>
      which === 'size' ? bar : u.valToPos(x, 'x') / width - bucket * 0.4 + s * bar,
    );
  };
  return uPlot.paths.bars!({
    disp: {
      x0: { unit: PixelPercent, values: (u) => place(u, 'x0') },
      size: { unit: PixelPercent, values: (u) => place(u, 'size') },
    },
  });
}

export function SeriesChart({
  buckets,
  bucketSeconds,
  series,
  kind,
  ticks,
  label,
  onPoint,
}: {
  /** Each bucket's start, epoch seconds. */
  buckets: number[];
  bucketSeconds: number;
  series: ChartSeries[];
  kind: 'line' | 'bar';
  /** The y axis' labels, from its tick values (distinct for distinct ticks). */
  ticks: (values: number[]) => string[];
  label: string;
  /** A click on a point: the bucket's index and the series' index. */
  onPoint?: (bucket: number, series: number) => void;
}) {
  const box = useRef<HTMLDivElement>(null);
  const onPointRef = useRef(onPoint);
  onPointRef.current = onPoint;
  const ticksRef = useRef(ticks);
  ticksRef.current = ticks;

  useLayoutEffect(() => {
    const el = box.current;
    if (!el) return;
    el.dataset.drawn = 'false';
    let u: uPlot | null = null;
    let click: (() => void) | null = null;
    const make = (width: number, height: number) => {
      // Each point sits in the middle of its bucket; the x range covers whole buckets.
      const xs = buckets.map((b) => b + bucketSeconds / 2);
      let focused: number | null = null;
      const opts: uPlot.Options = {
        width,
        height,
        legend: { show: false },
        cursor: { focus: { prox: 24 }, drag: { x: false, y: false } },
        focus: { alpha: 0.35 },
        scales: {
          x: {
            time: true,
            range: () => [buckets[0] ?? 0, (buckets[buckets.length - 1] ?? 0) + bucketSeconds],
          },
          y: { range: (_u, min, max) => [Math.min(0, min), max > 0 ? max * 1.08 : 1] },
        },
        axes: [
          { stroke: '#5f6b7a', grid: { stroke: '#eef0f3' }, ticks: { stroke: '#e2e5ea' } },
          {
            stroke: '#5f6b7a',
            grid: { stroke: '#eef0f3' },
            ticks: { stroke: '#e2e5ea' },
            // Wide enough for the longest label ($0.0000025), at about 7 px a character.
            size: (_u, values) =>
              Math.max(48, 24 + 7 * Math.max(0, ...(values ?? []).map((v) => String(v).length))),
            values: (_u, vals) => {
              // The labels drawn are in the page too, for tests and tools.
              const labels = ticksRef.current(vals);
              el.dataset.yTicks = JSON.stringify(labels);
              return labels;
            },
          },
        ],
        series: [
          {},
          ...series.map((s, i) => ({
            label: s.label,
            stroke: s.colour,
            width: 2,
            ...(kind === 'bar'
              ? {
                  fill: `${s.colour}cc`,
                  paths: groupedBars(series.length, i, bucketSeconds),
                  points: { show: false },
                }
              : { points: { show: buckets.length <= 60, size: 5 }, spanGaps: false }),
          })),
        ],
        hooks: {
          setSeries: [
            (_u, idx, o) => {
              // uPlot passes { focus } when the cursor comes near a series (or leaves them all).
              const focus = (o as { focus?: boolean }).focus;
              if (focus !== undefined) focused = focus ? idx : null;
            },
          ],
          // uPlot draws in a microtask after it is made: still before the frame is painted.
          ready: [
            () => {
              el.dataset.drawn = 'true';
            },
          ],
        },
      };
      const data = [xs, ...series.map((s) => s.values)] as uPlot.AlignedData;
      const chart = new uPlot(opts, data, el);
      click = () => {
        const idx = chart.cursor.idx;
        const s = focused ?? (series.length === 1 ? 1 : null);
        if (idx !== null && idx !== undefined && s !== null && onPointRef.current)
          onPointRef.current(idx, s - 1);
      };
      chart.over.addEventListener('click', click);
      if (onPointRef.current) chart.over.style.cursor = 'pointer';
      return chart;
    };
    // The observer's first report comes in the frame's rendering steps, after the layout of this
    // commit and before its paint: the chart is made then, at its box's size, with no layout forced
    // here (every chart of the page is measured in the one layout); a box without a width yet
    // (hidden) gets its chart when it has one, and a later change of size only resizes it.
    let last = { width: 0, height: 0 };
    const observer = new ResizeObserver(([entry]) => {
      const next = {
        width: Math.round(entry.contentRect.width),
        height: Math.round(entry.contentRect.height),
      };
      if (next.width === last.width && next.height === last.height) return;
      last = next;
      if (next.width <= 0) return;
      if (u) u.setSize(next);
      else u = make(next.width, next.height);
    });
    observer.observe(el);
    return () => {
      observer.disconnect();
      if (u && click) u.over.removeEventListener('click', click);
      u?.destroy();
      el.dataset.drawn = 'false';
    };
  }, [buckets, series, kind, bucketSeconds]);

  return <div className="chart" ref={box} role="img" aria-label={label} />;
}
