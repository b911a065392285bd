import { useVirtualizer } from '@tanstack/react-virtual';
import { type KeyboardEvent, useEffect, useLayoutEffect, useMemo, useRef, useState } from 'react';
import { hasFailed } from '../lib/failures.ts';
import type { TreeRecord } from '../lib/api-types.ts';
import { costOf, formatCost, formatCount, formatDuration, totalTokens } from '../lib/format.ts';
import { axisTicks, timelineOf, visibleRows } from '../lib/span-tree.ts';
import { KindIcon } from './KindIcon.tsx';

const ROW_HEIGHT = 30;

/**
 * The span tree beside its waterfall, one row per visible span. Only the rows in view are in the
 * page (TanStack Virtual), so a trace of thousands of spans opens and scrolls like a small one.
 * Keyboard: arrows move and fold, Home/End jump; the tree is one tab stop.
 */
export function TraceTree({
  root,
  selectedId,
  onSelect,
  collapsed,
  onToggle,
}: {
  root: TreeRecord;
  selectedId: string;
  onSelect: (id: string) => void;
  collapsed: ReadonlySet<string>;
  onToggle: (id: string, open?: boolean) => void;
}) {
  const timeline = useMemo(() => timelineOf(root), [root]);
  const rows = useMemo(() => visibleRows(root, collapsed, timeline), [root, collapsed, timeline]);
  const scrollRef = useRef<HTMLDivElement>(null);
  const virtual = useVirtualizer({
    count: rows.length,
    getScrollElement: () => scrollRef.current,
    estimateSize: () => ROW_HEIGHT,
    overscan: 12,
  });
  const selectedIndex = rows.findIndex((r) => r.record.id === selectedId);

  useEffect(() => {
    if (selectedIndex >= 0) virtual.scrollToIndex(selectedIndex, { align: 'auto' });
  }, [selectedIndex, virtual]);

  // The tree keeps the focus (its rows are its aria-activedescendant): a click moves it from the
  // row to the tree, so a row folded away or scrolled out of the page never takes it along.
  const focusTree = () => scrollRef.current?.focus({ preventScroll: true });

  const onKeyDown = (e: KeyboardEvent<HTMLDivElement>) => {
    const row = rows[selectedIndex];
    const go = (i: number) => {
      const target = rows[Math.max(0, Math.min(rows.length - 1, i))];
      if (target) onSelect(target.record.id);
    };
    switch (e.key) {
      case 'ArrowDown':
        go(selectedIndex + 1);
        break;
      case 'ArrowUp':
        go(selectedIndex - 1);
        break;
      case 'Home':
        go(0);
        break;
      case 'End':
        go(rows.length - 1);
        break;
      case 'ArrowRight':
        if (row?.childCount && collapsed.has(row.record.id)) onToggle(row.record.id, true);
        else go(selectedIndex + 1);
        break;
      case 'ArrowLeft':
        if (row?.childCount && !collapsed.has(row.record.id)) onToggle(row.record.id, false);
        else if (row?.record.parent_id) onSelect(row.record.parent_id);
        break;
      default:
        return;
    }
    e.preventDefault();
  };

  // As many axis labels as the axis has room for at its width.
  const axisRef = useRef<HTMLSpanElement>(null);
  const [axisPx, setAxisPx] = useState(0);
  useLayoutEffect(() => {
    const el = axisRef.current;
    if (!el) return;
    const observer = new ResizeObserver(([entry]) => setAxisPx(entry.contentRect.width));
    observer.observe(el);
    return () => observer.disconnect();
  }, []);
  const ticks = axisTicks(axisPx);
  return (
    <div className="trace-tree">
      <div className="tree-head" aria-hidden="true">
        <span>Span</span>
        <span className="axis" ref={axisRef}>
          {ticks.map((t) => (
            <span key={t} style={{ left: `${t * 100}%` }}>
              {t === 0 ? '0' : formatDuration(t * timeline.totalMs)}
            </span>
          ))}
        </span>
      </div>
      <div
        ref={scrollRef}
        className="tree-scroll"
        role="tree"
        aria-label={`Spans of ${root.name || 'the trace'} (${rows.length} shown)`}
        tabIndex={0}
        aria-activedescendant={selectedIndex >= 0 ? `row-${selectedId}` : undefined}
        onKeyDown={onKeyDown}
        style={{ height: virtual.getTotalSize() }}
      >
        <div style={{ height: virtual.getTotalSize(), position: 'relative' }}>
          {virtual.getVirtualItems().map((item) => {
            const row = rows[item.index];
            const r = row.record;
            const tokens = totalTokens(r.metrics);
            const cost = costOf(r.metrics);
            const failed = hasFailed(r);
            const open = !collapsed.has(r.id);
            const left = (row.offsetMs / timeline.totalMs) * 100;
            const width = row.durationMs === null ? 0 : (row.durationMs / timeline.totalMs) * 100;
            return (
              // biome-ignore lint/a11y/useKeyWithClickEvents: the tree (aria-activedescendant) takes the keys for its rows
              <div
                key={r.id}
                id={`row-${r.id}`}
                data-index={item.index}
                tabIndex={-1}
                role="treeitem"
                aria-level={row.depth + 1}
                aria-expanded={row.childCount ? open : undefined}
                aria-selected={r.id === selectedId}
                className={r.id === selectedId ? 'tree-row selected' : 'tree-row'}
                style={{ transform: `translateY(${item.start}px)`, height: ROW_HEIGHT }}
                onClick={() => {
                  focusTree();
                  onSelect(r.id);
                }}
              >
                <span className="tree-cell" style={{ paddingLeft: `${Math.min(row.depth, 40) * 14 + 4}px` }}>
                  {row.childCount > 0 ? (
                    <button
                      type="button"
                      tabIndex={-1}
                      className="caret"
                      aria-label={open ? `Collapse ${r.name}` : `Expand ${r.name}`}
                      onClick={(e) => {
                        e.stopPropagation();
                        focusTree();
                        onToggle(r.id);
                      }}
                    >
                      {open ? '▾' : '▸'}
                    </button>
                  ) : (
                    <span className="caret" />
                  )}
                  <KindIcon type={r.type} />
                  <span className="tree-name">{r.name || r.type}</span>
                  {failed && (
                    <span className="error-mark" title="error" role="img" aria-label="error">
                      !
                    </span>
                  )}
                  <span className="tree-meta">
                    {tokens !== null && <span title="tokens">{formatCount(tokens)} tok</span>}
                    {(tokens !== null || cost !== null) && (
                      <span className="cost" title={cost === null ? 'no price for this model' : 'cost'}>
                        {formatCost(cost)}
                      </span>
                    )}
                    <span>{formatDuration(row.durationMs)}</span>
                  </span>
                </span>
                <span className="bar-cell">
                  <span
                    className={`bar bar-${r.type}${failed ? ' bar-error' : ''}`}
                    style={{ left: `${Math.min(left, 99.5)}%`, width: `max(${width}%, 2px)` }}
                  />
                </span>
              </div>
            );
          })}
        </div>
      </div>
    </div>
  );
}
