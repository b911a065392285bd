/**
 * The integration kinds that call a model: each kind's PUT body checked and turned into its stored
 * settings (nothing secret) and token, and the settings as GET /v2/integrations/{name} shows them.
 */
import { type Loc, ValidationError } from '../domain/errors.ts';
import { textProblem } from '../domain/text.ts';
import type { GatewayIntegrationInput, KindBody, ModelKind } from '../schemas/integrations.ts';
import { AZURE_API_VERSION } from './model-providers.ts';

function checkText(loc: Loc, value: string, secret = false): void {
  const problem = textProblem(value);
  if (problem)
    throw new ValidationError({
      loc,
      msg: problem,
      type: 'value_error',
      ...(secret ? {} : { input: value }),
    });
}

/** An absolute http(s) URL (decisions.md), checked with the WHATWG URL parser. */
function checkEndpoint(endpoint: string, loc: Loc = ['body', 'endpoint']): void {
  checkText(loc, endpoint);
  let url: URL | null = null;
  // The URL parser forgives surrounding blanks and control characters; a stored endpoint must not need that.
  const clean = ![...endpoint].some(
    (ch) => /\s/.test(ch) || ch.charCodeAt(0) < 0x20 || ch.charCodeAt(0) === 0x7f,
  );
  if (clean) {
    try {
      url = new URL(endpoint);
    } catch {
      url = null;
    }
  }
  if (url && url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new ValidationError({
      loc,
      msg: "URL scheme should be 'http' or 'https'",
      type: 'url_scheme',
      input: endpoint,
      ctx: { expected_schemes: "'http' or 'https'" },
    });
  }
  if (!url?.hostname) {
    throw new ValidationError({
      loc,
      msg: 'Input should be a valid URL (absolute, with a host)',
      type: 'url_parsing',
      input: endpoint,
    });
  }
}

function checkToken(token: string): void {
  checkText(['body', 'token'], token, true);
  if (token.trim() === '') {
    // No `input` in this item: the value of a secret field is never echoed.
    throw new ValidationError({
      loc: ['body', 'token'],
      msg: 'The token must not be blank',
      type: 'value_error',
    });
  }
}

/** The known fields of a multi_modal_config; unknown ones are ignored, as in every body, not stored. */
function multiModalConfig(c: GatewayIntegrationInput['multi_modal_config']) {
  if (!c) return null;
  const { max_files, max_file_size_bytes } = c;
  return { max_files, max_file_size_bytes };
}

function checkNames(loc: Loc, names: string[]): void {
  for (const [i, n] of names.entries()) checkText([...loc, i], n);
}

/** The stored settings of a kind's PUT body (the token apart), or a 422. */
export function settingsOf(kind: ModelKind, body: KindBody): Record<string, unknown> {
  checkToken(body.token);
  switch (kind) {
    case 'example_gateway':
      checkEndpoint(body.endpoint);
      checkText(['body', 'use_case'], body.use_case);
      return {
        endpoint: body.endpoint,
        use_case: body.use_case,
        multi_modal_config: multiModalConfig(body.multi_modal_config),
      };
    case 'openai':
      if (body.organization_id) checkText(['body', 'organization_id'], body.organization_id);
      return { organization_id: body.organization_id || null };
    case 'anthropic':
      if (body.endpoint) checkEndpoint(body.endpoint);
      return { endpoint: body.endpoint || null };
    case 'azure': {
      checkEndpoint(body.endpoint);
      const deployments: Record<string, string> = body.deployments ?? {};
      checkNames(['body', 'deployments'], [...Object.keys(deployments), ...Object.values(deployments)]);
      if (body.azure_deployment) checkText(['body', 'azure_deployment'], body.azure_deployment);
      if (body.api_version !== undefined) checkText(['body', 'api_version'], body.api_version);
      return {
        endpoint: body.endpoint,
        api_version: body.api_version ?? AZURE_API_VERSION,
        azure_deployment: body.azure_deployment || null,
        deployments,
      };
    }
    case 'custom': {
      checkEndpoint(body.endpoint);
      checkNames(['body', 'models'], body.models);
      const models = [...new Set<string>(body.models)];
      if (body.default_model && !models.includes(body.default_model))
        throw new ValidationError({
          loc: ['body', 'default_model'],
          msg: 'The default model must be one of the models',
          type: 'value_error',
          input: body.default_model,
        });
      return { endpoint: body.endpoint, models, default_model: body.default_model || null };
    }
  }
}

/** The models an integration's settings name (custom's models, Azure's deployments), [] when none. */
export function configuredModels(kind: string, config: Record<string, any>): string[] {
  if (kind === 'custom') return config.models ?? [];
  if (kind === 'azure')
    return [
      ...new Set([
        ...Object.keys(config.deployments ?? {}),
        ...(config.azure_deployment ? [config.azure_deployment] : []),
      ]),
    ];
  return [];
}

/** The model a status check asks when the provider lists none. */
export function defaultModel(kind: string, config: Record<string, any>): string | null {
  return config.default_model ?? configuredModels(kind, config)[0] ?? null;
}

/** GET /v2/integrations/{name}: the kind's settings as the hosted API shows them. */
export function settingsView(id: string, kind: string, config: Record<string, any>) {
  const base = { id, name: kind, extra: null };
  switch (kind) {
    case 'openai':
      return { ...base, organization_id: config.organization_id ?? null };
    case 'anthropic':
      return { ...base, endpoint: config.endpoint ?? null, authentication_type: 'api_key' };
    case 'azure':
      return {
        ...base,
        endpoint: config.endpoint,
        api_version: config.api_version,
        azure_deployment: config.azure_deployment ?? null,
        deployments: config.deployments ?? {},
        authentication_type: 'api_key',
      };
    case 'custom':
      return {
        ...base,
        endpoint: config.endpoint,
        models: config.models ?? [],
        default_model: config.default_model ?? null,
      };
    default:
      return {
        ...base,
        endpoint: config.endpoint,
        use_case: config.use_case,
        multi_modal_config: config.multi_modal_config ?? null,
      };
  }
}
