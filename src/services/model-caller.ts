/**
 * The part of the model-call module (services/model-calls.ts, per rooms/MODEL-CALLS.md) that Signals
 * uses. Signals reaches models only through it; until the module is wired into the services, runs
 * report their model-free findings and say that model calls are not available.
 */
export interface ModelCaller {
  call(input: {
    integrationId: string;
    model: string;
    messages: { role: 'system' | 'user' | 'assistant' | 'tool'; content: string }[];
    temperature?: number;
    maxTokens?: number;
    responseFormat?:
      | { type: 'json' }
      | { type: 'json_schema'; name: string; schema: Record<string, unknown> };
    purpose: 'signals';
    projectId: string | null;
    runId?: string | null;
    signal?: AbortSignal;
  }): Promise<{
    callId: string;
    model: string;
    choices: { text: string }[];
    tokensIn: number;
    tokensOut: number;
    costUsd: number | null;
  }>;
}
