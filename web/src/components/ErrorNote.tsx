/** An API error, shown as the server worded it, with a retry when the page can try again. */
export function ErrorNote({ error, retry }: { error: Error; retry?: () => void }) {
  return (
    <div className="error-note" role="alert">
      <strong>Something went wrong.</strong> <span>{error.message}</span>
      {retry && (
        <button type="button" className="button small" onClick={retry}>
          Try again
        </button>
      )}
    </div>
  );
}

export function Loading({ what }: { what: string }) {
  return (
    <p className="loading" aria-live="polite">
      <span className="spinner" aria-hidden="true" /> Loading {what}…
    </p>
  );
}
