/**
 * A time series chart drawn by uPlot: one line (or bar per bucket) per series, the buckets on the
 * x axis. Only the dashboard and token-usage pages import it (they load on demand), so the record
 * pages never download the charting code.
 *
 * The drawn values are not only pixels: the chart's caller lists them in its legend as data
 * attributes, and the chart marks itself data-drawn once uPlot has painted.
 */
import { useEffect, useRef, useState } from 'react';
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

/** Width and height of an element, as they change. */
function useSize(ref: React.RefObject<HTMLElement | null>) {
  const [size, setSize] = useState<{ width: number; height: number } | null>(null);
  useEffect(() => {
    const el = ref.current;
    if (!el) return;
    const observer = new ResizeObserver(([entry]) => {
      const { width, height } = entry.contentRect;
      setSize((s) =>
        s && Math.round(s.width) === Math.round(width) && Math.round(s.height) === Math.round(height)
          ? s
          : { width, height },
      );
    });
    observer.observe(el);
    return () => observer.disconnect();
  }, [ref]);
  return size;
}

export function SeriesChart({
  buckets,
  bucketSeconds,
  series,
  kind,
  format,
  label,
  onPoint,
}: {
  /** Each bucket's start, epoch seconds. */
  buckets: number[];
  bucketSeconds: number;
  series: ChartSeries[];
  kind: 'line' | 'bar';
  /** The y axis' labels. */
  format: (v: number) => string;
  label: string;
  /** A click on a point: the bucket's index and the series' index. */
  onPoint?: (bucket: number, series: number) => void;
}) {
  const box = useRef<HTMLDivElement>(null);
  const size = useSize(box);
  const chart = useRef<uPlot | null>(null);
  const [drawn, setDrawn] = useState(false);
  const onPointRef = useRef(onPoint);
  onPointRef.current = onPoint;
  const hasSize = size !== null && size.width > 0;

  // biome-ignore lint/correctness/useExhaustiveDependencies: a new chart for new data; a new size only resizes it (below)
  useEffect(() => {
    const el = box.current;
    if (!el || !hasSize || !size) return;
    // Each point sits in the middle of its bucket; the x range covers whole buckets.
    const xs = buckets.map((b) => b + bucketSeconds / 2);
    let focused: number | null = null;
    const opts: uPlot.Options = {
      width: size.width,
      height: size.height,
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
          size: 80,
          values: (_u, vals) => vals.map((v) => format(v)),
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
      },
    };
    const data = [xs, ...series.map((s) => s.values)] as uPlot.AlignedData;
    const u = new uPlot(opts, data, el);
    chart.current = u;
    const click = () => {
      const idx = u.cursor.idx;
      const s = focused ?? (series.length === 1 ? 1 : null);
      if (idx !== null && idx !== undefined && s !== null && onPointRef.current)
        onPointRef.current(idx, s - 1);
    };
    u.over.addEventListener('click', click);
    if (onPointRef.current) u.over.style.cursor = 'pointer';
    setDrawn(true);
    return () => {
      u.over.removeEventListener('click', click);
      u.destroy();
      chart.current = null;
      setDrawn(false);
    };
  }, [buckets, series, kind, bucketSeconds, hasSize]);

  useEffect(() => {
    if (size && size.width > 0) chart.current?.setSize({ width: size.width, height: size.height });
  }, [size]);

  return (
    <div className="chart" ref={box} role="img" aria-label={label} data-drawn={drawn ? 'true' : 'false'} />
  );
}
