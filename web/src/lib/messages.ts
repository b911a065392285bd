/**
 * How to show a record's input or output: chat messages when it holds messages (one, or a list),
 * retrieved documents, plain text, or JSON otherwise.
 */
export interface ToolCall {
  id?: string;
  function?: { name?: string; arguments?: string };
}

export interface ChatMessage {
  role: string;
  content: string | null;
  tool_calls?: ToolCall[] | null;
  tool_call_id?: string | null;
}

export interface RetrievedDocument {
  content: string;
  metadata?: Record<string, unknown>;
}

export type Shown =
  | { kind: 'empty' }
  | { kind: 'text'; text: string }
  | { kind: 'messages'; messages: ChatMessage[] }
  | { kind: 'documents'; documents: RetrievedDocument[] }
  | { kind: 'json'; value: unknown };

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

export function isMessage(v: unknown): v is ChatMessage {
  return (
    isObject(v) &&
    typeof v.role === 'string' &&
    (v.content === null || typeof v.content === 'string' || v.content === undefined) &&
    (v.tool_calls === undefined || v.tool_calls === null || Array.isArray(v.tool_calls))
  );
}

function asDocument(v: unknown): RetrievedDocument | null {
  if (!isObject(v) || isMessage(v)) return null;
  const content = typeof v.page_content === 'string' ? v.page_content : v.content;
  if (typeof content !== 'string') return null;
  return { content, metadata: isObject(v.metadata) ? v.metadata : undefined };
}

export function classify(value: unknown): Shown {
  if (value === null || value === undefined || value === '') return { kind: 'empty' };
  if (typeof value === 'string') return { kind: 'text', text: value };
  if (isMessage(value)) return { kind: 'messages', messages: [value] };
  if (Array.isArray(value) && value.length > 0) {
    if (value.every(isMessage)) return { kind: 'messages', messages: value };
    const docs = value.map(asDocument);
    if (docs.every((d) => d !== null)) return { kind: 'documents', documents: docs as RetrievedDocument[] };
    if (value.every((v) => typeof v === 'string')) return { kind: 'text', text: value.join('\n') };
  }
  return { kind: 'json', value };
}

/**
 * One line of text for a table cell. Of a conversation it shows the last message, or the last one
 * `role` wrote (an llm input's question is the last user message, not the tool answer after it).
 */
export function preview(value: unknown, max = 200, role?: string): string {
  const shown = classify(value);
  let text: string;
  switch (shown.kind) {
    case 'empty':
      return '';
    case 'text':
      text = shown.text;
      break;
    case 'messages': {
      const last =
        shown.messages.findLast((m) => m.role === role) ?? shown.messages[shown.messages.length - 1];
      text =
        last.content ??
        (last.tool_calls ?? [])
          .map((c) => `${c.function?.name ?? 'tool'}(${c.function?.arguments ?? ''})`)
          .join(', ');
      break;
    }
    case 'documents':
      text = shown.documents.map((d) => d.content).join(' · ');
      break;
    case 'json':
      text = JSON.stringify(shown.value);
      break;
  }
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}
