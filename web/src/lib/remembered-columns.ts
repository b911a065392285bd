/** The column chooser's choice per record tab, kept in the browser between visits. */
import type { RecordTab } from './api-types.ts';

const key = (tab: RecordTab) => `spanbase.columns.${tab}`;

export function rememberedColumns(tab: RecordTab): string[] | null {
  try {
    const v = JSON.parse(localStorage.getItem(key(tab)) ?? 'null');
    return Array.isArray(v) && v.every((c) => typeof c === 'string') ? v : null;
  } catch {
    return null;
  }
}

export function rememberColumns(tab: RecordTab, columns: string[] | null): void {
  try {
    if (columns) localStorage.setItem(key(tab), JSON.stringify(columns));
    else localStorage.removeItem(key(tab));
  } catch {
    // Storage refused (private mode, quota): the choice still lives in the URL.
  }
}
