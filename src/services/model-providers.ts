/**
 * The provider SDKs behind one small interface: `openai` for every OpenAI-shaped provider (OpenAI,
 * Azure OpenAI, the gateway, custom endpoints) and `@anthropic-ai/sdk` for Anthropic. The SDKs speak
 * each provider's wire format; timeouts, retries, limits, errors and spend are ours (model-calls.ts),
 * so both SDKs are built with retries off and reach the network only through the guarded fetch.
 */
import { createRequire } from 'node:module';
import type Anthropic from '@anthropic-ai/sdk';
import type OpenAI from 'openai';
import { ProviderFetchError } from './provider-fetch.ts';

export interface ChatMessage {
  role: 'system' | 'user' | 'assistant' | 'tool';
  content: string;
}

export type ResponseFormat =
  | { type: 'json' }
  | { type: 'json_schema'; name: string; schema: Record<string, unknown> };

export interface ToolSpec {
  name: string;
  description?: string;
  parameters: Record<string, unknown>;
}

export interface ChatRequest {
  model: string;
  messages: ChatMessage[];
  temperature?: number;
  maxTokens?: number;
  n?: number;
  responseFormat?: ResponseFormat;
  tools?: ToolSpec[];
  /** Streams the first choice's text as it arrives. */
  onDelta?: (text: string) => void;
}

export interface Choice {
  text: string;
  toolCalls?: { name: string; arguments: string }[];
  finishReason?: string;
}

export interface ChatResult {
  /** The model the provider says answered (the requested one when it does not say). */
  model: string;
  choices: Choice[];
  tokensIn: number;
  tokensOut: number;
}

export interface ProviderClient {
  chat(req: ChatRequest, signal: AbortSignal): Promise<ChatResult>;
  /** The provider's own model list, or null when it has none (the configured models are used). */
  listModels(signal: AbortSignal): Promise<string[] | null>;
}

/** An integration's kind and settings (nothing secret but `token`). */
export interface ProviderSettings {
  id: string;
  name: string;
  config: Record<string, any>;
  token: string;
}

// Always given: the SDKs would otherwise read a base URL (or project) from the server's environment.
const OPENAI_URL = 'https://api.openai.com/v1';
const ANTHROPIC_URL = 'https://api.anthropic.com';
export const AZURE_API_VERSION = '2024-10-21';
const ANTHROPIC_MAX_TOKENS = 4096;

const badResponse = (msg: string) => new ProviderFetchError('bad_response', msg);

// The SDKs are loaded at the first model call, not at start (together about 0.3 s of the server's
// start, for a feature many servers use later or never). Only this module touches them.
const require = createRequire(import.meta.url);
let sdks: {
  Anthropic: typeof import('@anthropic-ai/sdk').default;
  OpenAI: typeof import('openai').default;
  AzureOpenAI: typeof import('openai').AzureOpenAI;
} | null = null;
function loadSdks() {
  if (!sdks) {
    const anthropic = require('@anthropic-ai/sdk');
    const openai = require('openai');
    sdks = {
      Anthropic: anthropic.default ?? anthropic,
      OpenAI: openai.default ?? openai,
      AzureOpenAI: openai.AzureOpenAI,
    };
  }
  return sdks;
}

export function providerClient(
  s: ProviderSettings,
  fetch: typeof globalThis.fetch,
  timeoutMs: number,
): ProviderClient {
  // Our own timeout governs; the SDK's is set the same so it never cuts a call shorter.
  const common = { apiKey: s.token, fetch, maxRetries: 0, timeout: timeoutMs, logLevel: 'off' as const };
  const { Anthropic, OpenAI, AzureOpenAI } = loadSdks();
  switch (s.name) {
    case 'anthropic':
      return anthropicClient(new Anthropic({ ...common, baseURL: s.config.endpoint || ANTHROPIC_URL }));
    case 'azure': {
      const deployments: Record<string, string> = s.config.deployments ?? {};
      const client = new AzureOpenAI({
        ...common,
        endpoint: s.config.endpoint,
        apiVersion: s.config.api_version || AZURE_API_VERSION,
        organization: null,
        project: null,
      });
      return openaiClient(client, (model) => deployments[model] ?? s.config.azure_deployment ?? model, false);
    }
    case 'openai':
      return openaiClient(
        new OpenAI({
          ...common,
          baseURL: OPENAI_URL,
          organization: s.config.organization_id ?? null,
          project: null,
        }),
        (m) => m,
        true,
      );
    default:
      // example_gateway and custom: an OpenAI-compatible base URL. Custom lists its models itself.
      return openaiClient(
        new OpenAI({ ...common, baseURL: s.config.endpoint }),
        (m) => m,
        s.name !== 'custom',
      );
  }
}

function openaiMessages(messages: ChatMessage[]): OpenAI.Chat.ChatCompletionMessageParam[] {
  // A tool result needs the id of the call it answers, which plain messages do not carry: it goes as user text.
  return messages.map((m) =>
    m.role === 'tool' ? { role: 'user', content: m.content } : { role: m.role, content: m.content },
  );
}

function openaiFormat(f: ResponseFormat | undefined) {
  if (!f) return undefined;
  if (f.type === 'json') return { type: 'json_object' as const };
  return { type: 'json_schema' as const, json_schema: { name: f.name, schema: f.schema, strict: true } };
}

function openaiClient(
  client: OpenAI,
  deploymentOf: (model: string) => string,
  listsModels: boolean,
): ProviderClient {
  return {
    async chat(req, signal) {
      const body = {
        model: deploymentOf(req.model),
        messages: openaiMessages(req.messages),
        ...(req.temperature !== undefined ? { temperature: req.temperature } : {}),
        ...(req.maxTokens !== undefined ? { max_tokens: req.maxTokens } : {}),
        ...(req.n !== undefined && req.n !== 1 ? { n: req.n } : {}),
        ...(req.responseFormat ? { response_format: openaiFormat(req.responseFormat) } : {}),
        ...(req.tools?.length
          ? {
              tools: req.tools.map((t) => ({
                type: 'function' as const,
                function: { name: t.name, description: t.description, parameters: t.parameters },
              })),
            }
          : {}),
      };
      if (req.onDelta) return openaiStream(client, body, req.model, req.onDelta, signal);
      const r: any = await client.chat.completions.create(body, { signal });
      if (!r || typeof r !== 'object' || !Array.isArray(r.choices))
        throw badResponse('The provider answered something that is not a chat completion');
      if (r.choices.length === 0) throw badResponse('The provider answered no choices');
      return {
        model: typeof r.model === 'string' && r.model ? r.model : req.model,
        choices: r.choices.map((c: any) => ({
          text: typeof c.message?.content === 'string' ? c.message.content : '',
          ...(c.message?.tool_calls?.length
            ? {
                toolCalls: c.message.tool_calls.map((t: any) => ({
                  name: String(t.function?.name ?? ''),
                  arguments: String(t.function?.arguments ?? ''),
                })),
              }
            : {}),
          ...(c.finish_reason ? { finishReason: String(c.finish_reason) } : {}),
        })),
        tokensIn: Number(r.usage?.prompt_tokens ?? 0),
        tokensOut: Number(r.usage?.completion_tokens ?? 0),
      };
    },
    async listModels(signal) {
      if (!listsModels) return null;
      const ids: string[] = [];
      for await (const m of client.models.list({ signal })) ids.push(m.id);
      return ids;
    },
  };
}

async function openaiStream(
  client: OpenAI,
  body: any,
  requested: string,
  onDelta: (text: string) => void,
  signal: AbortSignal,
): Promise<ChatResult> {
  const stream = await client.chat.completions.create(
    { ...body, stream: true, stream_options: { include_usage: true } },
    { signal },
  );
  const choices: Choice[] = [];
  const tools: Map<number, { name: string; arguments: string }>[] = [];
  let model = requested;
  let tokensIn = 0;
  let tokensOut = 0;
  for await (const chunk of stream as unknown as AsyncIterable<any>) {
    if (chunk.model) model = chunk.model;
    if (chunk.usage) {
      tokensIn = Number(chunk.usage.prompt_tokens ?? 0);
      tokensOut = Number(chunk.usage.completion_tokens ?? 0);
    }
    for (const c of chunk.choices ?? []) {
      const i = Number(c.index ?? 0);
      choices[i] ??= { text: '' };
      const text = c.delta?.content;
      if (typeof text === 'string' && text) {
        choices[i].text += text;
        if (i === 0) onDelta(text);
      }
      for (const t of c.delta?.tool_calls ?? []) {
        tools[i] ??= new Map();
        const call = tools[i].get(t.index) ?? { name: '', arguments: '' };
        call.name += t.function?.name ?? '';
        call.arguments += t.function?.arguments ?? '';
        tools[i].set(t.index, call);
      }
      if (c.finish_reason) choices[i].finishReason = String(c.finish_reason);
    }
  }
  if (choices.length === 0) throw badResponse('The provider answered no choices');
  tools.forEach((m, i) => {
    if (m && choices[i]) choices[i].toolCalls = [...m.values()];
  });
  return { model, choices: [...choices].map((c) => c ?? { text: '' }), tokensIn, tokensOut };
}

function anthropicClient(client: Anthropic): ProviderClient {
  const one = async (
    req: ChatRequest,
    signal: AbortSignal,
    onDelta?: (t: string) => void,
  ): Promise<ChatResult> => {
    const system = req.messages
      .filter((m) => m.role === 'system')
      .map((m) => m.content)
      .concat(req.responseFormat?.type === 'json' ? ['Answer with one JSON object and nothing else.'] : [])
      .join('\n\n');
    // A schema is asked for as a forced tool call, Anthropic's way to structured output; its input is the answer.
    const schemaTool =
      req.responseFormat?.type === 'json_schema'
        ? { name: req.responseFormat.name, input_schema: req.responseFormat.schema as any }
        : null;
    const tools = [
      ...(req.tools ?? []).map((t) => ({
        name: t.name,
        description: t.description,
        input_schema: t.parameters as any,
      })),
      ...(schemaTool ? [schemaTool] : []),
    ];
    const body: Anthropic.MessageCreateParams = {
      model: req.model,
      max_tokens: req.maxTokens ?? ANTHROPIC_MAX_TOKENS,
      messages: req.messages
        .filter((m) => m.role !== 'system')
        .map((m) => ({ role: m.role === 'assistant' ? 'assistant' : 'user', content: m.content })),
      ...(system ? { system } : {}),
      ...(req.temperature !== undefined ? { temperature: req.temperature } : {}),
      ...(tools.length ? { tools } : {}),
      ...(schemaTool ? { tool_choice: { type: 'tool', name: schemaTool.name } } : {}),
    };
    let msg: any;
    if (onDelta) {
      msg = { content: [] as any[], usage: { input_tokens: 0, output_tokens: 0 }, model: req.model };
      const stream = await client.messages.create({ ...body, stream: true }, { signal });
      for await (const ev of stream as AsyncIterable<any>) {
        if (ev.type === 'message_start') {
          msg.model = ev.message?.model ?? msg.model;
          msg.usage.input_tokens = ev.message?.usage?.input_tokens ?? 0;
        } else if (ev.type === 'content_block_start') {
          msg.content[ev.index] = { ...ev.content_block, text: ev.content_block.text ?? '', partial: '' };
        } else if (ev.type === 'content_block_delta') {
          const block = msg.content[ev.index];
          if (ev.delta?.type === 'text_delta' && block) {
            block.text += ev.delta.text;
            onDelta(ev.delta.text);
          } else if (ev.delta?.type === 'input_json_delta' && block) block.partial += ev.delta.partial_json;
        } else if (ev.type === 'message_delta') {
          msg.usage.output_tokens = ev.usage?.output_tokens ?? msg.usage.output_tokens;
          msg.stop_reason = ev.delta?.stop_reason;
        }
      }
      for (const b of msg.content)
        if (b?.type === 'tool_use') b.input = b.partial ? JSON.parse(b.partial) : {};
    } else {
      msg = await client.messages.create(body, { signal });
    }
    if (!msg || typeof msg !== 'object' || !Array.isArray(msg.content))
      throw badResponse('The provider answered something that is not a message');
    const blocks: any[] = msg.content.filter(Boolean);
    const toolUses = blocks.filter((b) => b.type === 'tool_use');
    const answer = schemaTool ? toolUses.find((b) => b.name === schemaTool.name) : null;
    const calls = toolUses.filter((b) => b !== answer);
    const text = answer
      ? JSON.stringify(answer.input)
      : blocks
          .filter((b) => b.type === 'text')
          .map((b) => b.text)
          .join('');
    if (!answer && blocks.length === 0) throw badResponse('The provider answered no content');
    return {
      model: typeof msg.model === 'string' && msg.model ? msg.model : req.model,
      choices: [
        {
          text,
          ...(calls.length
            ? { toolCalls: calls.map((b) => ({ name: b.name, arguments: JSON.stringify(b.input) })) }
            : {}),
          ...(msg.stop_reason ? { finishReason: String(msg.stop_reason) } : {}),
        },
      ],
      tokensIn: Number(msg.usage?.input_tokens ?? 0),
      tokensOut: Number(msg.usage?.output_tokens ?? 0),
    };
  };
  return {
    async chat(req, signal) {
      // Anthropic has no `n`: several choices are several calls (only the first one streams).
      const n = Math.max(1, req.n ?? 1);
      const results = await Promise.all(
        Array.from({ length: n }, (_, i) => one(req, signal, i === 0 ? req.onDelta : undefined)),
      );
      return {
        model: results[0].model,
        choices: results.flatMap((r) => r.choices),
        tokensIn: results.reduce((a, r) => a + r.tokensIn, 0),
        tokensOut: results.reduce((a, r) => a + r.tokensOut, 0),
      };
    },
    async listModels(signal) {
      const ids: string[] = [];
      for await (const m of client.models.list({}, { signal })) ids.push(m.id);
      return ids;
    },
  };
}
