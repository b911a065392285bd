/** Metric names as the API's column catalogue labels them ("Input tokens", not num_input_tokens). */
import { post } from './api.ts';
import type { Column } from './api-types.ts';
import { columnTitle } from './cells.ts';
import type { Scope } from './list-view.ts';
import { useApi } from './use-api.ts';

/** The label of each metric key of a run's records of `tab`; a key the catalogue lacks stays a key. */
export function useMetricLabels(
  projectId: string,
  tab: 'traces' | 'spans' | 'sessions',
  scope: Scope,
): (key: string) => string {
  const catalogue = useApi(`columns/${tab}/${JSON.stringify(scope)}`, () =>
    post<{ columns: Column[] }>(`/v2/projects/${projectId}/${tab}/available_columns`, scope),
  );
  return (key) => {
    const id = `metrics/${key}`;
    const column = catalogue.data?.columns.find((c) => c.id === id);
    return column ? columnTitle(column, id) : key;
  };
}
