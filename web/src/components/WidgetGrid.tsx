import { type ReactNode, memo, useMemo } from 'react';
import { GridLayout, type Layout, useContainerWidth } from 'react-grid-layout';
import 'react-grid-layout/css/styles.css';
import type { Widget } from '../lib/api-types.ts';
import { type Cell, GRID_COLUMNS, layoutOf, sameCells } from '../lib/dashboard-view.ts';

const ROW_HEIGHT = 64;
const MARGIN = 12;
/** Below this width a 12-column grid is too narrow to read: widgets stack in their layout order. */
const NARROW = 720;

/**
 * One grid of widgets (the dashboard's, or a section's) placed from layout_map; a widget is dragged
 * by its title bar and resized from its corner, and the new places are saved; for a caller who may
 * not change the dashboard they stay put. Memoised: the page re-renders it only when its
 * widgets, their places or what they draw change.
 */
export const WidgetGrid = memo(function WidgetGrid({
  widgets,
  layoutMap,
  onLayout,
  render,
  editable = true,
}: {
  widgets: Widget[];
  layoutMap: Record<string, unknown>;
  onLayout: (cells: Cell[]) => void;
  render: (w: Widget) => ReactNode;
  /** False: the widgets stay where they are (a caller below editor may not move them). */
  editable?: boolean;
}) {
  const { width, containerRef, mounted } = useContainerWidth();
  const cells = useMemo(() => layoutOf(widgets, layoutMap), [widgets, layoutMap]);
  const save = (layout: Layout) => {
    const next = layout.map(({ i, x, y, w, h }) => ({ i, x, y, w, h }));
    if (!sameCells(next, cells)) onLayout(next);
  };
  const byId = new Map(widgets.map((w) => [w.id, w]));
  const narrow = mounted && width < NARROW;
  return (
    <div ref={containerRef} className="widget-grid">
      {narrow ? (
        <div className="widget-stack">
          {[...cells]
            .sort((a, b) => a.y - b.y || a.x - b.x)
            .map((c) => (
              <div key={c.i} style={{ height: c.h * ROW_HEIGHT + (c.h - 1) * MARGIN }}>
                {render(byId.get(c.i)!)}
              </div>
            ))}
        </div>
      ) : (
        mounted && (
          <GridLayout
            width={width}
            layout={cells}
            gridConfig={{
              cols: GRID_COLUMNS,
              rowHeight: ROW_HEIGHT,
              margin: [MARGIN, MARGIN],
              containerPadding: [0, 0],
            }}
            dragConfig={{ enabled: editable, handle: '.widget-head', cancel: 'button, a, select, input' }}
            resizeConfig={{ enabled: editable, handles: ['se'] }}
            onDragStop={save}
            onResizeStop={save}
          >
            {widgets.map((w) => (
              <div key={w.id}>{render(w)}</div>
            ))}
          </GridLayout>
        )
      )}
    </div>
  );
});
