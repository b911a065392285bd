import { type RefObject, useEffect, useState } from 'react';
import { rowWindow } from './dashboard-view.ts';

/**
 * Which rows of a table in the scroll box `box` are worth putting in the page (a dashboard table
 * may have 10,000 buckets). Before the box is measured it assumes `initialViewport` pixels, so the
 * first paint is complete without a second render.
 */
export function useRowWindow(
  box: RefObject<HTMLElement | null>,
  count: number,
  rowPx: number,
  { overscan = 10, offset = 0, initialViewport = 600 } = {},
) {
  const [view, setView] = useState({ top: 0, height: initialViewport });
  useEffect(() => {
    const el = box.current;
    if (!el) return;
    const read = () =>
      setView((v) =>
        v.top === el.scrollTop && v.height === el.clientHeight
          ? v
          : { top: el.scrollTop, height: el.clientHeight },
      );
    const observer = new ResizeObserver(read);
    observer.observe(el);
    el.addEventListener('scroll', read, { passive: true });
    return () => {
      observer.disconnect();
      el.removeEventListener('scroll', read);
    };
  }, [box]);
  return rowWindow(view.top, view.height, rowPx, count, overscan, offset);
}
