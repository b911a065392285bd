/**
 * A model provider for tests (no real one is reachable): node:http on 127.0.0.1 with an ephemeral
 * port, OpenAI-compatible (POST .../chat/completions, GET .../models) or Anthropic-shaped (POST
 * /v1/messages, GET /v1/models), streaming (SSE) when asked. It records every request and answers the
 * faults a test queues, one per request, in order.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export type Fault =
  | { status: number; retryAfter?: number; body?: string; headers?: Record<string, string> }
  | 'hang'
  | 'not_json'
  | 'no_choices';

export interface FakeRequest {
  method: string;
  path: string;
  headers: Record<string, string>;
  body: any;
}

export interface FakeProvider {
  /** Base URL: http://127.0.0.1:PORT/v1 (OpenAI-compatible), http://127.0.0.1:PORT (Anthropic: the SDK adds /v1). */
  url: string;
  kind: 'openai' | 'anthropic';
  /** Every request, in arrival order. */
  requests: FakeRequest[];
  /** The assistant text for a chat request (default: the last user message, echoed). */
  reply: (body: any, req: { path: string }) => string;
  /** What GET /models lists. */
  models: string[];
  /** Milliseconds before each answer (settable). */
  delayMs: number;
  /** Requests being answered right now, and the most at once (concurrency tests). */
  inFlight: number;
  maxInFlight: number;
  queueFault(f: Fault): void;
  close(): Promise<void>;
}

const words = (text: string) => text.split(/\s+/).filter(Boolean).length;

function lastUser(body: any): string {
  const msgs: any[] = Array.isArray(body?.messages) ? body.messages : [];
  const m = [...msgs].reverse().find((x) => x.role === 'user');
  return typeof m?.content === 'string' ? m.content : JSON.stringify(m?.content ?? '');
}

/** Prompt tokens: one per word of every message (and of Anthropic's system), enough to test spend. */
function promptTokens(body: any): number {
  const msgs: any[] = Array.isArray(body?.messages) ? body.messages : [];
  const sys = typeof body?.system === 'string' ? words(body.system) : 0;
  return (
    sys +
    msgs.reduce((n, m) => n + words(typeof m.content === 'string' ? m.content : JSON.stringify(m.content)), 0)
  );
}

/** A reply in three pieces, to stream. */
function pieces(text: string): string[] {
  const a = Math.ceil(text.length / 3);
  return [text.slice(0, a), text.slice(a, 2 * a), text.slice(2 * a)].filter((p) => p.length);
}

export async function startFakeProvider(
  opts: { kind?: 'openai' | 'anthropic'; delayMs?: number } = {},
): Promise<FakeProvider> {
  const kind = opts.kind ?? 'openai';
  const faults: Fault[] = [];
  const sse = (res: http.ServerResponse, events: [string | null, unknown][]) => {
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    for (const [event, data] of events) {
      res.write(
        `${event ? `event: ${event}\n` : ''}data: ${typeof data === 'string' ? data : JSON.stringify(data)}\n\n`,
      );
    }
    res.end();
  };
  const json = (res: http.ServerResponse, status: number, body: unknown) => {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  };

  function openaiChat(res: http.ServerResponse, body: any, text: string, noChoices: boolean) {
    const n = Number(body?.n ?? 1);
    const usage = {
      prompt_tokens: promptTokens(body),
      completion_tokens: words(text) * n,
      total_tokens: promptTokens(body) + words(text) * n,
    };
    const model = String(body?.model ?? 'fake-model');
    const base = { id: 'chatcmpl-fake', created: 1, model };
    if (body?.stream) {
      const events: [null, unknown][] = [];
      if (!noChoices)
        for (let i = 0; i < n; i++)
          for (const p of pieces(text))
            events.push([
              null,
              { ...base, object: 'chat.completion.chunk', choices: [{ index: i, delta: { content: p } }] },
            ]);
      if (!noChoices)
        for (let i = 0; i < n; i++)
          events.push([
            null,
            {
              ...base,
              object: 'chat.completion.chunk',
              choices: [{ index: i, delta: {}, finish_reason: 'stop' }],
            },
          ]);
      if (body.stream_options?.include_usage)
        events.push([null, { ...base, object: 'chat.completion.chunk', choices: [], usage }]);
      events.push([null, '[DONE]']);
      return sse(res, events);
    }
    const choices = noChoices
      ? []
      : Array.from({ length: n }, (_, i) => ({
          index: i,
          message: { role: 'assistant', content: text },
          finish_reason: 'stop',
        }));
    json(res, 200, { ...base, object: 'chat.completion', choices, usage });
  }

  function anthropicChat(res: http.ServerResponse, body: any, text: string, noChoices: boolean) {
    const usage = { input_tokens: promptTokens(body), output_tokens: words(text) };
    const model = String(body?.model ?? 'fake-model');
    const content = noChoices ? [] : [{ type: 'text', text }];
    const message = {
      id: 'msg_fake',
      type: 'message',
      role: 'assistant',
      model,
      stop_reason: 'end_turn',
      usage,
    };
    if (body?.stream) {
      const events: [string, unknown][] = [
        [
          'message_start',
          {
            type: 'message_start',
            message: { ...message, content: [], usage: { ...usage, output_tokens: 0 } },
          },
        ],
      ];
      if (!noChoices) {
        events.push([
          'content_block_start',
          { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
        ]);
        for (const p of pieces(text))
          events.push([
            'content_block_delta',
            { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: p } },
          ]);
        events.push(['content_block_stop', { type: 'content_block_stop', index: 0 }]);
      }
      events.push([
        'message_delta',
        {
          type: 'message_delta',
          delta: { stop_reason: 'end_turn' },
          usage: { output_tokens: usage.output_tokens },
        },
      ]);
      events.push(['message_stop', { type: 'message_stop' }]);
      return sse(res, events);
    }
    json(res, 200, { ...message, content });
  }

  const provider: FakeProvider = {
    url: '',
    kind,
    requests: [],
    reply: (body) => lastUser(body),
    models: ['fake-model', 'fake-model-mini'],
    delayMs: opts.delayMs ?? 0,
    inFlight: 0,
    maxInFlight: 0,
    queueFault: (f) => {
      faults.push(f);
    },
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', async () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      let body: any = raw;
      try {
        body = raw ? JSON.parse(raw) : null;
      } catch {}
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries(req.headers))
        headers[k] = Array.isArray(v) ? v.join(', ') : String(v ?? '');
      const path = (req.url ?? '/').split('?')[0];
      provider.requests.push({ method: req.method ?? 'GET', path, headers, body });
      provider.inFlight++;
      provider.maxInFlight = Math.max(provider.maxInFlight, provider.inFlight);
      res.on('close', () => {
        provider.inFlight--;
      });
      const fault = faults.shift();
      if (fault === 'hang') return; // answered never; close() ends it
      if (provider.delayMs > 0) {
        // Cut short when the caller goes away or close() ends the connection: a pending timer would
        // keep the test's process alive for the rest of a long delay.
        await new Promise<void>((r) => {
          const t = setTimeout(r, provider.delayMs);
          res.on('close', () => {
            clearTimeout(t);
            r();
          });
        });
        if (res.destroyed) return;
      }
      if (typeof fault === 'object') {
        res.writeHead(fault.status, {
          'content-type': 'application/json',
          ...(fault.retryAfter !== undefined ? { 'retry-after': String(fault.retryAfter) } : {}),
          ...fault.headers,
        });
        res.end(
          fault.body ??
            JSON.stringify({ error: { message: `fake fault ${fault.status}`, type: 'fake_error' } }),
        );
        return;
      }
      if (fault === 'not_json') {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end('this is not json {');
        return;
      }
      if (req.method === 'GET' && path.endsWith('/models')) {
        const data = provider.models.map((id) => ({
          id,
          object: 'model',
          created: 1,
          owned_by: 'fake',
          type: 'model',
        }));
        return json(
          res,
          200,
          kind === 'anthropic'
            ? { data, has_more: false, first_id: null, last_id: null }
            : { object: 'list', data },
        );
      }
      const chat = kind === 'anthropic' ? path.endsWith('/v1/messages') : path.endsWith('/chat/completions');
      if (req.method !== 'POST' || !chat)
        return json(res, 404, { error: { message: `no route ${req.method} ${path}` } });
      const text = provider.reply(body, { path });
      if (kind === 'anthropic') anthropicChat(res, body, text, fault === 'no_choices');
      else openaiChat(res, body, text, fault === 'no_choices');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const port = (server.address() as AddressInfo).port;
  provider.url = kind === 'anthropic' ? `http://127.0.0.1:${port}` : `http://127.0.0.1:${port}/v1`;
  return provider;
}
