import { type MouseEvent, useCallback } from 'react';
import { useNavigate } from 'react-router';

/**
 * One click handler for a part of a page full of plain `<a href>` links to the console's own pages
 * (a dashboard's legends, tables and figures: hundreds of them): a plain left click navigates within
 * the app, as react-router's Link would, and any other click (a new tab, a modifier) is the browser's.
 * A Link per cell costs its own hooks on every render; an anchor costs nothing.
 */
export function usePlainLinks() {
  const navigate = useNavigate();
  return useCallback(
    (e: MouseEvent) => {
      if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.altKey || e.ctrlKey || e.shiftKey) return;
      const a = (e.target as Element).closest?.('a[href]') as HTMLAnchorElement | null;
      if (!a || (a.target && a.target !== '_self') || a.hasAttribute('download')) return;
      const url = new URL(a.href, window.location.href);
      if (url.origin !== window.location.origin) return;
      e.preventDefault();
      navigate(url.pathname + url.search + url.hash);
    },
    [navigate],
  );
}
