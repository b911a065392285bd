import { useCallback, useEffect, useRef, useState } from 'react';

export interface Loaded<T> {
  data: T | undefined;
  error: Error | undefined;
  loading: boolean;
  /** The data answers the current key (not the previous one, kept while the next loads). */
  fresh: boolean;
  reload: () => void;
}

/**
 * Runs `load` whenever `key` changes (null: not yet) and keeps the latest answer; an answer to an
 * older key that arrives late is dropped. The previous data stays while the next loads, so a table
 * does not flash empty between pages.
 */
export function useApi<T>(key: string | null, load: () => Promise<T>): Loaded<T> {
  const [state, setState] = useState<{ data?: T; error?: Error; loading: boolean; key?: string }>({
    loading: key !== null,
  });
  const [nonce, setNonce] = useState(0);
  const loadRef = useRef(load);
  loadRef.current = load;
  // biome-ignore lint/correctness/useExhaustiveDependencies: the key stands for what load reads; nonce reloads
  useEffect(() => {
    if (key === null) return;
    let current = true;
    setState((s) => ({ data: s.data, key: s.key, loading: true }));
    loadRef.current().then(
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
