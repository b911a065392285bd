import { type ChatMessage, classify } from '../lib/messages.ts';
import { JsonView } from './JsonView.tsx';

function prettyArguments(text: string | undefined): string {
  if (!text) return '';
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return text;
  }
}

export function MessageList({ messages }: { messages: ChatMessage[] }) {
  return (
    <ol className="messages">
      {messages.map((m, i) => (
        // biome-ignore lint/suspicious/noArrayIndexKey: messages have no ids and never reorder
        <li key={i} className={`message role-${m.role}`}>
          <div className="message-role">
            {m.role}
            {m.tool_call_id && <span className="muted"> · answers {m.tool_call_id}</span>}
          </div>
          {m.content && <div className="message-content">{m.content}</div>}
          {(m.tool_calls ?? []).map((c, j) => (
            // biome-ignore lint/suspicious/noArrayIndexKey: a message's tool calls keep their order
            <div key={j} className="tool-call">
              <div className="tool-call-name">
                → {c.function?.name ?? 'tool'}
                {c.id && <span className="muted"> ({c.id})</span>}
              </div>
              <pre>{prettyArguments(c.function?.arguments)}</pre>
            </div>
          ))}
        </li>
      ))}
    </ol>
  );
}

/** An input or output: chat messages, retrieved documents, text, or JSON. */
export function ShownValue({ value }: { value: unknown }) {
  const shown = classify(value);
  switch (shown.kind) {
    case 'empty':
      return <p className="muted">(empty)</p>;
    case 'text':
      return <div className="text-value">{shown.text}</div>;
    case 'messages':
      return <MessageList messages={shown.messages} />;
    case 'documents':
      return (
        <ol className="documents">
          {shown.documents.map((d, i) => (
            // biome-ignore lint/suspicious/noArrayIndexKey: documents keep the order they were retrieved in
            <li key={i}>
              <div className="text-value">{d.content}</div>
              {d.metadata && Object.keys(d.metadata).length > 0 && (
                <JsonView value={d.metadata} openDepth={0} />
              )}
            </li>
          ))}
        </ol>
      );
    case 'json':
      return <JsonView value={shown.value} />;
  }
}
