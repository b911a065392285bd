import type { RunKind } from '../lib/api-types.ts';

/** A run with no records yet: how to send the first trace, with this run's ids filled in. */
export function EmptyStream({
  projectId,
  projectName,
  runId,
  runName,
  kind,
}: {
  projectId: string;
  projectName: string;
  runId: string;
  runName: string;
  kind: RunKind;
}) {
  const origin = window.location.origin;
  const target = kind === 'experiments' ? `"experiment_id": "${runId}"` : `"log_stream_id": "${runId}"`;
  const curl = `curl -s -XPOST ${origin}/v2/projects/${projectId}/traces \\
  -H "Service-API-Key: $SPANBASE_KEY" -H 'content-type: application/json' -d '{
  ${target},
  "traces": [{"name": "hello", "input": "Hi there", "output": "Hello!",
    "spans": [{"type": "llm", "name": "chat", "model": "gpt-4o",
      "input": [{"role": "user", "content": "Hi there"}],
      "output": {"role": "assistant", "content": "Hello!"}}]}]}'`;
  const otel = `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=${origin}/otel/v1/traces
OTEL_EXPORTER_OTLP_TRACES_PROTOCOL=http/protobuf
OTEL_EXPORTER_OTLP_TRACES_HEADERS="Service-API-Key=$SPANBASE_KEY,projectid=${projectId},${
    kind === 'experiments' ? `experimentid=${runId}` : `logstreamid=${runId}`
  }"`;
  const client = `GALILEO_API_URL=${origin}/v2
GALILEO_API_KEY=$SPANBASE_KEY
GALILEO_PROJECT=${projectName}
GALILEO_LOG_STREAM=${runName}`;
  return (
    <section className="empty onboarding" aria-labelledby="empty-title">
      <h2 id="empty-title">No records yet</h2>
      <p>
        Send a first trace to this {kind === 'experiments' ? 'experiment' : 'log stream'} in one of three
        ways, then reload.
      </p>
      <h3>With curl</h3>
      <pre>
        <code>{curl}</code>
      </pre>
      <h3>With OpenTelemetry (any SDK's OTLP/HTTP exporter)</h3>
      <pre>
        <code>{otel}</code>
      </pre>
      {kind === 'log_streams' && (
        <>
          <h3>With the hosted service's TypeScript client (npm install galileo)</h3>
          <pre>
            <code>{client}</code>
          </pre>
        </>
      )}
      <p className="muted">
        <code>$SPANBASE_KEY</code> is an API key: the first start printed the admin's, or create one with{' '}
        <code>POST /v2/users/api_keys</code>.
      </p>
    </section>
  );
}
