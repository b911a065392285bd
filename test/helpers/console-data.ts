/**
 * Data the console's browser tests, its README screenshot and its benchmark look at: a project with a
 * log stream of support-bot traces (nested spans, chat messages, a tool call, retrieved documents,
 * errors, metadata and tags) grouped in sessions, an empty experiment, and traces of any size.
 */

export type Call = (method: string, url: string, body?: unknown) => Promise<{ status: number; body: any }>;

export interface ConsoleWorld {
  projectId: string;
  projectName: string;
  logStreamId: string;
  logStreamName: string;
  experimentId: string;
  /** The three-turn conversation. */
  sessionId: string;
  /** Its traces, in order. */
  chatTraceIds: string[];
  /** Every trace of the log stream. */
  traceCount: number;
}

const ms = (n: number) => n * 1_000_000;

async function ok(call: Call, method: string, url: string, body?: unknown) {
  const r = await call(method, url, body);
  if (r.status >= 300) throw new Error(`${method} ${url} → ${r.status} ${JSON.stringify(r.body)}`);
  return r.body;
}

/** One support turn: workflow → retriever, llm (asks for a tool), tool, llm (answers). */
function supportTrace(
  question: string,
  answer: string,
  at: number,
  opts: { customer: string; fail?: boolean },
) {
  const t = (offset: number) => new Date(at + offset).toISOString();
  const orderId = 4000 + (Math.floor(at / 1000) % 1000);
  const system = {
    role: 'system',
    content: 'You are the support assistant of an online shop. Be brief and kind.',
  };
  const user = { role: 'user', content: question };
  const toolCall = {
    id: `call_${orderId}`,
    function: { name: 'lookup_order', arguments: JSON.stringify({ order_id: orderId }) },
  };
  return {
    id: crypto.randomUUID(),
    name: 'support',
    created_at: t(0),
    input: question,
    output: opts.fail ? null : answer,
    user_metadata: { customer: opts.customer, channel: 'web' },
    tags: opts.fail ? ['prod', 'escalated'] : ['prod'],
    ...(opts.fail ? { status_code: 500, error_message: 'Upstream model timed out after 30 s' } : {}),
    metrics: { duration_ns: ms(opts.fail ? 30_400 : 2_350) },
    spans: [
      {
        type: 'workflow',
        name: 'answer',
        created_at: t(5),
        input: question,
        output: opts.fail ? null : answer,
        metrics: { duration_ns: ms(opts.fail ? 30_380 : 2_330) },
        spans: [
          {
            type: 'retriever',
            name: 'search-help-center',
            created_at: t(10),
            input: question,
            output: [
              { content: 'Orders ship within 2 business days.', metadata: { source: 'help/shipping' } },
              {
                content: 'Refunds take 5–7 days after we receive the item.',
                metadata: { source: 'help/refunds' },
              },
            ],
            metrics: { duration_ns: ms(140) },
          },
          {
            type: 'llm',
            name: 'plan',
            model: 'gpt-4o',
            created_at: t(160),
            input: [system, user],
            output: { role: 'assistant', content: null, tool_calls: [toolCall] },
            metrics: { duration_ns: ms(610), num_input_tokens: 182, num_output_tokens: 24 },
          },
          {
            type: 'tool',
            name: 'lookup_order',
            created_at: t(780),
            input: JSON.stringify({ order_id: orderId }),
            output: JSON.stringify({ order_id: orderId, status: 'shipped', carrier: 'DHL' }),
            tool_call_id: toolCall.id,
            metrics: { duration_ns: ms(95) },
          },
          {
            type: 'llm',
            name: 'respond',
            model: 'gpt-4o',
            created_at: t(890),
            input: [
              system,
              user,
              { role: 'assistant', content: null, tool_calls: [toolCall] },
              { role: 'tool', content: `{"status":"shipped","carrier":"DHL"}`, tool_call_id: toolCall.id },
            ],
            output: opts.fail ? null : { role: 'assistant', content: answer },
            ...(opts.fail ? { status_code: 504, error_message: 'Upstream model timed out after 30 s' } : {}),
            metrics: {
              duration_ns: ms(opts.fail ? 29_500 : 1_440),
              num_input_tokens: 236,
              num_output_tokens: opts.fail ? 0 : 41,
            },
          },
        ],
      },
    ],
  };
}

const QUESTIONS: [string, string][] = [
  ['Where is my order?', 'Your order shipped yesterday with DHL and should arrive tomorrow.'],
  [
    'Can I change the delivery address?',
    'Yes, until the parcel leaves our warehouse; I have updated it for you.',
  ],
  [
    'How do I get a refund?',
    'Send the item back with the included label; the refund follows within 5–7 days.',
  ],
  ['Do you ship to Norway?', 'We do: delivery to Norway takes 3–5 business days.'],
  ['My discount code does not work', 'That code expired last week; here is a new one: SPRING10.'],
  ['I was charged twice', 'I see two charges; the second one is a hold that disappears within 3 days.'],
];

/** Creates the world through the API (`call` sends one request with an admin's credentials). */
export async function seedConsoleWorld(call: Call, now = Date.now()): Promise<ConsoleWorld> {
  const suffix = Math.random().toString(36).slice(2, 7);
  const projectName = `support-bot-${suffix}`;
  const project = await ok(call, 'POST', '/v2/projects', { name: projectName });
  const logStreamName = 'production';
  const ls = await ok(call, 'POST', `/v2/projects/${project.id}/log_streams`, { name: logStreamName });
  const ex = await ok(call, 'POST', `/v2/projects/${project.id}/experiments`, { name: 'prompt-v2' });

  // A three-turn conversation, ten minutes ago.
  const start = now - 10 * 60_000;
  const chat = [
    supportTrace(
      'Where is my order #4417?',
      'It shipped yesterday with DHL; tracking number 00340434.',
      start,
      {
        customer: 'acme',
      },
    ),
    supportTrace(
      'Great, when will it arrive?',
      'DHL expects to deliver it tomorrow before noon.',
      start + 40_000,
      {
        customer: 'acme',
      },
    ),
    supportTrace('Can I still add an item?', '', start + 95_000, { customer: 'acme', fail: true }),
  ];
  const sessionId = crypto.randomUUID();
  await ok(call, 'POST', `/v2/projects/${project.id}/traces`, {
    log_stream_id: ls.id,
    sessions: [{ id: sessionId, name: 'Order 4417 follow-up', external_id: `chat-${suffix}` }],
    session_id: sessionId,
    traces: chat,
  });

  // More traffic over the last hours, from two customers, in sessions of one trace.
  const more = Array.from({ length: 18 }, (_, i) => {
    const [q, a] = QUESTIONS[i % QUESTIONS.length];
    return supportTrace(q, a, now - (i + 1) * 7 * 60_000 - 3_600_000, {
      customer: i % 3 === 0 ? 'globex' : 'acme',
      fail: i === 7,
    });
  });
  await ok(call, 'POST', `/v2/projects/${project.id}/traces`, { log_stream_id: ls.id, traces: more });

  return {
    projectId: project.id,
    projectName,
    logStreamId: ls.id,
    logStreamName,
    experimentId: ex.id,
    sessionId,
    chatTraceIds: chat.map((t) => t.id),
    traceCount: chat.length + more.length,
  };
}

/**
 * A trace of `spans` spans shaped like an agent's run: steps of an agent, each a plan (llm), a tool
 * call and its nested llm, so the tree is a few levels deep and wide, with times laid end to end.
 */
export function bigTrace(spans: number, at = Date.now()) {
  const STEP = 4; // spans per step: agent-step, llm, tool, llm inside the tool
  const steps = Math.max(1, Math.floor(spans / STEP));
  let made = 0;
  let clock = at;
  const next = (duration: number) => {
    const created_at = new Date(clock).toISOString();
    clock += duration;
    return created_at;
  };
  const children: any[] = [];
  for (let s = 0; s < steps && made < spans; s++) {
    const step: any = {
      type: 'workflow',
      name: `step ${s + 1}`,
      created_at: new Date(clock).toISOString(),
      spans: [],
    };
    made++;
    const stepStart = clock;
    for (const kind of ['llm', 'tool'] as const) {
      if (made >= spans) break;
      made++;
      const span: any = {
        type: kind,
        name: kind === 'llm' ? 'decide' : 'search',
        created_at: next(kind === 'llm' ? 120 : 60),
        input: kind === 'llm' ? [{ role: 'user', content: `step ${s + 1}: what next?` }] : `query ${s + 1}`,
        output:
          kind === 'llm'
            ? { role: 'assistant', content: `call search for step ${s + 1}` }
            : `result ${s + 1}`,
        metrics: {
          duration_ns: ms(kind === 'llm' ? 120 : 60),
          ...(kind === 'llm' ? { num_input_tokens: 40, num_output_tokens: 9 } : {}),
        },
      };
      if (kind === 'tool' && made < spans) {
        made++;
        span.spans = [
          {
            type: 'llm',
            name: 'summarise',
            created_at: new Date(clock - 40).toISOString(),
            input: `summarise result ${s + 1}`,
            output: `summary ${s + 1}`,
            metrics: { duration_ns: ms(30), num_input_tokens: 20, num_output_tokens: 6 },
          },
        ];
      }
      step.spans.push(span);
    }
    step.metrics = { duration_ns: ms(clock - stepStart) };
    children.push(step);
  }
  return {
    id: crypto.randomUUID(),
    name: `agent run (${spans} spans)`,
    created_at: new Date(at).toISOString(),
    input: 'Research the question step by step.',
    output: 'Done.',
    metrics: { duration_ns: ms(clock - at) },
    spans: [
      {
        type: 'agent',
        name: 'agent',
        created_at: new Date(at).toISOString(),
        metrics: { duration_ns: ms(clock - at) },
        spans: children,
      },
    ],
  };
}
