import { useCallback, useEffect, useRef, useState } from 'react';
import { settledPrefetch, takePrefetched } from './prefetch.ts';

export interface Loaded<T> {
  data: T | undefined;
  error: Error | undefined;
  loading: boolean;
  /** The data answers the current key (not the previous one, kept while the next loads). */
  fresh: boolean;
  reload: () => void;
}

interface State<T> {
  data?: T;
  error?: Error;
  loading: boolean;
  key?: string;
}

/**
 * Runs `load` whenever `key` changes (null: not yet) and keeps the latest answer; an answer to an
 * older key that arrives late is dropped. The previous data stays while the next loads, so a table
 * does not flash empty between pages. A request a route's loader started under the same key
 * (lib/prefetch.ts) is taken instead of asked again, and when it has already answered by the first
 * render, that render shows it.
 */
export function useApi<T>(key: string | null, load: () => Promise<T>): Loaded<T> {
  // The key whose prefetched answer the first render showed: its effect only takes it.
  const shown = useRef<string | null>(null);
  const [state, setState] = useState<State<T>>(() => {
    const settled = key === null ? undefined : settledPrefetch<T>(key);
    if (key === null || !settled) return { loading: key !== null };
    shown.current = key;
    return { ...settled, key, loading: false };
  });
  const [nonce, setNonce] = useState(0);
  const loadRef = useRef(load);
  loadRef.current = load;
  // biome-ignore lint/correctness/useExhaustiveDependencies: the key stands for what load reads; nonce reloads
  useEffect(() => {
    if (key === null) return;
    const prefetched = takePrefetched<T>(key);
    if (shown.current === key) {
      shown.current = null;
      return;
    }
    let current = true;
    // (Already loading, as on mount: no new state, so no render.)
    setState((s) => (s.loading ? s : { data: s.data, key: s.key, loading: true }));
    (prefetched ?? loadRef.current()).then(
      (data) => current && setState({ data, key, loading: false }),
      (error: Error) => current && setState({ error, key, loading: false }),
    );
    return () => {
      current = false;
    };
  }, [key, nonce]);
  const reload = useCallback(() => setNonce((n) => n + 1), []);
  return {
    data: state.data,
    error: state.error,
    loading: state.loading,
    fresh: state.key === key && !state.loading,
    reload,
  };
}
