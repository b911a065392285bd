/**
 * Authorization matrix, generated from the route table (`/openapi.json`) and one declared rule per
 * route: every route × {no credentials, a wrong key, a revoked key, an expired token, a user the
 * project is not shared with, each collaborator role, admin}, with the status each cell must answer.
 *
 * A route without a rule in RULES fails the test: add its rule when you add the route. Rules for
 * routes that are not served yet are listed as pending (they are other helpers' routes in progress).
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import fc from 'fast-check';
import { SignJWT } from 'jose';
import type { Role } from '../../src/domain/roles.ts';
import { ROLES, atLeast } from '../../src/domain/roles.ts';
import { OTEL_PATHS } from '../../src/http/routes/otel.ts';
import { put, validArb } from '../helpers/arbitraries.ts';
import {
  type JsonSchema,
  type Operation,
  RefResolver,
  contractProblem,
  fillPath,
  operations,
  queryString,
} from '../helpers/openapi.ts';
import { type TestServer, startTestServer, storesUnderTest } from '../helpers/server.ts';
import { knownBatch } from '../helpers/world.ts';

// ---------------------------------------------------------------------------------------------
// The rules.

/**
 * - public: answers without credentials (not part of the matrix beyond "no 5xx").
 * - self: any signed-in user, acting on their own things.
 * - admin: admins only; everyone else 403.
 * - project: needs `role` on the project in the path; a user who cannot see it gets 404.
 * - integration: needs `role` on the integration in the path; a user who cannot see it gets 404.
 * - creator: only the world owner who made the target (a scorer) and admins; everyone else 403.
 * - refused: a route that refuses every signed-in caller with `status` (code scorers).
 */
type Rule =
  | { kind: 'public' }
  | { kind: 'self' }
  | { kind: 'admin' }
  | { kind: 'project'; role: Role }
  | { kind: 'integration'; role: Role }
  | { kind: 'creator' }
  | { kind: 'refused'; status: number };

interface RouteRule {
  rule: Rule;
  /** Builds a request that succeeds for a caller with enough rights (defaults: world ids, generated body). */
  build?: (c: CellContext) => Promise<Partial<Req>> | Partial<Req>;
  /** The request changes or removes its target: each allowed cell gets a fresh world. */
  destructive?: boolean;
}

interface Req {
  path: Record<string, string>;
  query: Record<string, unknown>;
  body: unknown;
  contentType: string;
  /** Extra request headers (the OTLP route names its target in headers). */
  headers?: Record<string, string>;
}

const pub: RouteRule = { rule: { kind: 'public' } };
const self: RouteRule = { rule: { kind: 'self' } };
const admin: RouteRule = { rule: { kind: 'admin' } };
const project = (role: Role, extra: Partial<RouteRule> = {}): RouteRule => ({
  rule: { kind: 'project', role },
  ...extra,
});
const integration = (role: Role, extra: Partial<RouteRule> = {}): RouteRule => ({
  rule: { kind: 'integration', role },
  ...extra,
});

let unique = 0;
const uniq = (p: string) => `${p}-${Date.now().toString(36)}-${unique++}`;

const WIDGET = { name: 'w', type: 'number', metric: 'id', aggregation: 'Count' };

/** A widget or section of the world's dashboard, made by its owner; its id. */
async function dashboardPart(c: CellContext, kind: 'widgets' | 'sections'): Promise<string> {
  const url = `/v2/projects/${c.w.ids.project_id}/log_streams/${c.w.log_stream_id}/trends/${c.w.ids.dashboard_id}/${kind}`;
  const r = await c.s.call(
    'POST',
    url,
    kind === 'widgets' ? WIDGET : { name: uniq('section') },
    c.w.owner.key,
  );
  assert.equal(r.status, 200, r.text);
  return r.body.id;
}

/** The path of the world's prompt template (and of one of its versions). */
const promptPath =
  (version?: number) =>
  (c: CellContext): Partial<Req> => ({
    path: {
      template_id: c.w.ids.prompt_template_id,
      ...(version === undefined ? {} : { version: String(version) }),
    },
  });

/**
 * A playground_run job body for the world's experiment, run with an integration of the caller's own
 * (at a closed port: the job fails in the background, which the route does not wait for).
 */
async function jobBody(c: CellContext) {
  const key = c.caller.key ?? c.w.owner.key;
  const i = await c.s.call(
    'PUT',
    '/v2/integrations/example_gateway',
    { endpoint: 'http://127.0.0.1:9/v1', use_case: 'chat', token: `tok-${'j'.repeat(24)}` },
    key,
  );
  const t = await c.s.call('GET', `/v2/templates/${c.w.ids.prompt_template_id}`, undefined, c.w.owner.key);
  return {
    job_name: 'playground_run',
    project_id: c.w.ids.project_id,
    run_id: c.w.ids.experiment_id,
    prompt_template_version_id: t.body.selected_version_id,
    dataset_id: c.w.ids.dataset_id,
    prompt_settings: { model_alias: 'm' },
    integration_id: i.body?.id,
  };
}

/** A job of the world's experiment, started by its owner; its id. */
async function worldJob(c: CellContext): Promise<string> {
  const r = await c.s.call(
    'POST',
    '/v2/jobs',
    await jobBody({ ...c, caller: { ...c.caller, key: c.w.owner.key } }),
    c.w.owner.key,
  );
  assert.equal(r.status, 200, r.text);
  return r.body.job_id;
}

/** A project rule on a job route: the job's project decides (a stranger gets 404, as for its run). */
const jobRule = (role: Role): RouteRule => ({
  rule: { kind: 'project', role },
  build: async (c) => ({ path: { job_id: await worldJob(c) } }),
});

const exPath = (c: CellContext): Partial<Req> => ({ path: { experiment_id: c.w.ids.experiment_id } });

/** A model price of the world's project, made by its owner; its id. */
async function modelPrice(c: CellContext): Promise<string> {
  const r = await c.s.call(
    'POST',
    `/v2/projects/${c.w.ids.project_id}/model_prices`,
    { model_pattern: uniq('m'), input_price_per_million: 1, output_price_per_million: 1 },
    c.w.owner.key,
  );
  assert.equal(r.status, 200, r.text);
  return r.body.id;
}

const creator: RouteRule = { rule: { kind: 'creator' } };

/** The path of one of the world's scorers (the owner's rule scorer, or its llm one). */
const scorerPath =
  (type: 'rule' | 'llm' = 'rule') =>
  (c: CellContext): Partial<Req> => ({
    path: { id: type === 'rule' ? c.w.ids.scorer_id : c.w.ids.llm_scorer_id },
  });

/** The caller's own custom integration (the owner's for callers without a working key), by its kind. */
async function ownCustom(c: CellContext): Promise<Partial<Req>> {
  const body = { token: uniq('tok'), endpoint: 'https://custom.example.com/v1', models: ['m1'] };
  const r = await c.s.call('PUT', '/v2/integrations/custom', body, c.caller.key ?? c.w.owner.key);
  assert.equal(r.status, 200, r.text);
  return { path: { name: 'custom' } };
}

const RULE_VERSION = { rule: 'contains', field: 'output', params: { value: 'answer' } };
const ALERT_PREVIEW = {
  metric: 'duration_ns',
  aggregation: 'Max',
  window_minutes: 60,
  comparison: 'gt',
  threshold: 1e9,
};
const ALERT = { ...ALERT_PREVIEW, window_minutes: 5 };

export const RULES: Record<string, RouteRule> = {
  // --- foundation: health, login, users, keys, groups -----------------------------------------
  'GET /v2/healthcheck': pub,
  'GET /readyz': pub,
  // Open on loopback (the matrix calls from there); elsewhere a bearer token (test/api/operations.test.ts).
  'GET /metrics': pub,
  // Public, with credentials that work: failed logins would throttle the address the matrix uses.
  'POST /login': {
    ...pub,
    build: (c) => ({ body: { username: c.w.owner.email, password: c.w.owner.password } }),
  },
  'POST /v2/login': {
    ...pub,
    build: (c) => ({ body: { username: c.w.owner.email, password: c.w.owner.password } }),
  },
  'POST /v2/login/api_key': { ...pub, build: (c) => ({ body: { api_key: c.w.owner.key } }) },
  // The web console's cookie session (test/api/console-session.test.ts covers the cookie itself).
  'POST /v2/console/login': {
    ...pub,
    build: (c) => ({ body: { email: c.w.owner.email, password: c.w.owner.password } }),
  },
  'POST /v2/console/logout': self,
  'GET /v2/current_user': self,
  'POST /v2/users': { ...admin, build: () => ({ body: { email: `${uniq('u')}@example.com` } }) },
  'GET /v2/users': admin,
  'GET /v2/users/{user_id}': { ...self, build: (c) => ({ path: { user_id: c.caller.id ?? c.w.owner.id } }) },
  'PATCH /v2/users/{user_id}': {
    ...admin,
    build: (c) => ({ path: { user_id: c.w.bystander.id }, body: { role: 'user' } }),
  },
  'POST /v2/users/api_keys': self,
  'GET /v2/users/api_keys': self,
  'DELETE /v2/users/api_keys/{api_key_id}': {
    ...self,
    destructive: true,
    build: async (c) => {
      // The caller's own spare key (the owner's for callers without a working key).
      const who = c.caller.id ? c.caller : c.w.owner;
      const k = await c.s.call(
        'POST',
        '/v2/users/api_keys',
        { description: 'spare' },
        who.key ?? c.s.adminKey,
      );
      return { path: { api_key_id: k.body.id } };
    },
  },
  'POST /v2/groups': { ...admin, build: () => ({ body: { name: uniq('g') } }) },
  'GET /v2/groups': self,
  'POST /v2/groups/{group_id}/members': {
    ...admin,
    build: (c) => ({ body: [{ user_id: c.w.bystander.id }] }),
  },
  'GET /v2/groups/{group_id}/members': self,
  'DELETE /v2/groups/{group_id}/members/{user_id}': {
    ...admin,
    destructive: true,
    build: async (c) => {
      await c.s.call('POST', `/v2/groups/${c.w.group_id}/members`, [{ user_id: c.w.bystander.id }]);
      return { path: { group_id: c.w.group_id, user_id: c.w.bystander.id } };
    },
  },

  // --- foundation: projects and runs ------------------------------------------------------------
  'POST /v2/projects': { ...self, build: () => ({ body: { name: uniq('p') } }) },
  'GET /v2/projects': self,
  'GET /v2/projects/all': self,
  'GET /v2/projects/{project_id}': project('viewer'),
  'DELETE /v2/projects/{project_id}': project('owner', { destructive: true }),
  'POST /v2/projects/{project_id}/collaborators': project('owner', {
    build: (c) => ({ body: { user_id: c.w.bystander.id, role: 'viewer' } }),
  }),
  'GET /v2/projects/{project_id}/users': project('viewer'),
  'GET /v2/projects/{project_id}/current_user_role': project('viewer'),
  'GET /v2/projects/{project_id}/groups': project('viewer'),
  'PATCH /v2/projects/{project_id}/users/{user_id}': project('owner', {
    build: (c) => ({ path: { user_id: c.w.viewer.id }, body: { role: 'viewer' } }),
  }),
  'PATCH /v2/projects/{project_id}/groups/{group_id}': project('owner', {
    build: async (c) => {
      const url = `/v2/projects/${c.w.ids.project_id}/collaborators`;
      await c.s.call('POST', url, { group_id: c.w.group_id, role: 'viewer' }, c.w.owner.key);
      return { body: { role: 'viewer' } };
    },
  }),
  'DELETE /v2/projects/{project_id}/users/{user_id}': project('owner', {
    destructive: true,
    build: async (c) => {
      const url = `/v2/projects/${c.w.ids.project_id}/collaborators`;
      await c.s.call('POST', url, { user_id: c.w.bystander.id, role: 'viewer' }, c.w.owner.key);
      return { path: { user_id: c.w.bystander.id } };
    },
  }),
  'DELETE /v2/projects/{project_id}/groups/{group_id}': project('owner', {
    destructive: true,
    build: async (c) => {
      const url = `/v2/projects/${c.w.ids.project_id}/collaborators`;
      await c.s.call('POST', url, { group_id: c.w.group_id, role: 'viewer' }, c.w.owner.key);
      return {};
    },
  }),
  'POST /v2/projects/{project_id}/log_streams': project('editor', {
    build: () => ({ body: { name: uniq('ls') } }),
  }),
  'GET /v2/projects/{project_id}/log_streams': project('viewer'),
  'GET /v2/projects/{project_id}/log_streams/{run_id}': project('viewer'),
  'POST /v2/projects/{project_id}/log_streams/search': project('viewer'),
  'POST /v2/projects/{project_id}/experiments': project('editor', {
    build: () => ({ body: { name: uniq('ex') } }),
  }),
  'GET /v2/projects/{project_id}/experiments': project('viewer'),
  'GET /v2/projects/{project_id}/experiments/{experiment_id}': project('viewer', { build: exPath }),
  'PUT /v2/projects/{project_id}/experiments/{experiment_id}': project('editor', {
    build: (c) => ({ ...exPath(c), body: { name: uniq('ex') } }),
  }),
  'PATCH /v2/projects/{project_id}/experiments/{experiment_id}': project('editor', {
    build: (c) => ({ ...exPath(c), body: { name: uniq('ex') } }),
  }),
  'DELETE /v2/projects/{project_id}/experiments/{experiment_id}': project('editor', {
    destructive: true,
    build: exPath,
  }),
  'GET /v2/projects/{project_id}/experiments/paginated': project('viewer'),
  'POST /v2/projects/{project_id}/experiments/paginated': project('viewer'),
  'GET /v2/projects/{project_id}/experiments/available_columns': project('viewer'),
  'POST /v2/projects/{project_id}/experiments/available_columns': project('viewer'),
  'POST /v2/projects/{project_id}/experiments/metrics': project('viewer', { build: () => ({ body: {} }) }),
  'GET /v2/projects/{project_id}/experiments/compare': project('viewer', {
    build: async (c) => {
      const ids: string[] = [];
      for (let k = 0; k < 2; k++) {
        const e = await c.s.call(
          'POST',
          `/v2/projects/${c.w.ids.project_id}/experiments`,
          { name: uniq('ex'), dataset: { dataset_id: c.w.ids.dataset_id } },
          c.w.owner.key,
        );
        assert.equal(e.status, 200, e.text);
        ids.push(e.body.id);
      }
      return { query: { experiment_ids: ids.join(',') } };
    },
  }),
  'POST /v2/projects/{project_id}/experiments/{experiment_id}/metrics': project('viewer', {
    build: (c) => ({ ...exPath(c), body: {} }),
  }),
  'GET /v2/projects/{project_id}/experiments/{experiment_id}/tags': project('viewer', { build: exPath }),
  'POST /v2/projects/{project_id}/experiments/{experiment_id}/tags': project('editor', {
    build: (c) => ({ ...exPath(c), body: { key: 'k', value: 'v' } }),
  }),
  'PUT /v2/projects/{project_id}/experiments/{experiment_id}/tags/{tag_id}': project('editor', {
    build: async (c) => {
      const url = `/v2/projects/${c.w.ids.project_id}/experiments/${c.w.ids.experiment_id}/tags`;
      const t = await c.s.call('POST', url, { key: uniq('k'), value: 'v' }, c.w.owner.key);
      return {
        path: { experiment_id: c.w.ids.experiment_id, tag_id: t.body.id },
        body: { key: 'k2', value: 'w' },
      };
    },
  }),
  'DELETE /v2/projects/{project_id}/experiments/{experiment_id}/tags/{tag_id}': project('editor', {
    destructive: true,
    build: async (c) => {
      const url = `/v2/projects/${c.w.ids.project_id}/experiments/${c.w.ids.experiment_id}/tags`;
      const t = await c.s.call('POST', url, { key: uniq('k'), value: 'v' }, c.w.owner.key);
      return { path: { experiment_id: c.w.ids.experiment_id, tag_id: t.body.id } };
    },
  }),
  'POST /v2/jobs': project('editor', { build: async (c) => ({ body: await jobBody(c) }) }),
  'GET /v2/jobs/{job_id}': jobRule('viewer'),
  'POST /v2/jobs/{job_id}/cancel': { ...jobRule('editor'), destructive: true },
  'GET /v2/projects/{project_id}/runs/{run_id}/jobs': project('viewer', {
    build: (c) => ({ path: { run_id: c.w.ids.experiment_id } }),
  }),
  'GET /v2/projects/{project_id}/runs/{run_id}/jobs/latest': project('viewer', {
    build: async (c) => {
      await worldJob(c);
      return { path: { run_id: c.w.ids.experiment_id } };
    },
  }),

  // --- ingestion (another helper's; rules to confirm when the routes land) ----------------------
  'POST /v2/projects/{project_id}/traces': project('editor', {
    build: (c) => ({ body: knownBatch(c.w.log_stream_id, 1, 'authz') }),
  }),
  'POST /v2/projects/{project_id}/sessions': project('editor', {
    build: (c) => ({ body: { log_stream_id: c.w.log_stream_id, name: uniq('session') } }),
  }),
  'POST /v2/projects/{project_id}/spans': project('editor', {
    build: (c) => ({
      body: {
        log_stream_id: c.w.log_stream_id,
        trace_id: c.w.ids.trace_id,
        parent_id: c.w.ids.trace_id,
        spans: [{ type: 'tool', name: uniq('added'), input: 'in', output: 'out' }],
      },
    }),
  }),
  'GET /v2/projects/{project_id}/traces/{trace_id}': project('viewer'),
  'GET /v2/projects/{project_id}/spans/{span_id}': project('viewer'),
  'GET /v2/projects/{project_id}/sessions/{session_id}': project('viewer'),
  'PATCH /v2/projects/{project_id}/traces/{trace_id}': project('editor'),
  'PATCH /v2/projects/{project_id}/spans/{span_id}': project('editor'),

  // --- search and columns (another helper's) --------------------------------------------------------
  'POST /v2/projects/{project_id}/sessions/search': project('viewer', {
    build: (c) => ({ body: { log_stream_id: c.w.log_stream_id } }),
  }),
  'POST /v2/projects/{project_id}/traces/search': project('viewer', {
    build: (c) => ({ body: { log_stream_id: c.w.log_stream_id } }),
  }),
  'POST /v2/projects/{project_id}/spans/search': project('viewer', {
    build: (c) => ({ body: { log_stream_id: c.w.log_stream_id } }),
  }),
  'POST /v2/projects/{project_id}/sessions/available_columns': project('viewer', {
    build: (c) => ({ body: { log_stream_id: c.w.log_stream_id } }),
  }),
  'POST /v2/projects/{project_id}/traces/available_columns': project('viewer', {
    build: (c) => ({ body: { log_stream_id: c.w.log_stream_id } }),
  }),
  'POST /v2/projects/{project_id}/spans/available_columns': project('viewer', {
    build: (c) => ({ body: { log_stream_id: c.w.log_stream_id } }),
  }),
  'POST /v2/projects/{project_id}/log_streams/{log_stream_id}/logstream_insights/token_usage': project(
    'viewer',
    {
      build: () => ({ body: {} }),
    },
  ),

  // --- counting, deleting and exporting by filter; retention settings -----------------------------
  ...Object.fromEntries(
    ['sessions', 'traces', 'spans'].flatMap((t) => [
      [
        `POST /v2/projects/{project_id}/${t}/count`,
        project('viewer', { build: (c: CellContext) => ({ body: { log_stream_id: c.w.log_stream_id } }) }),
      ],
      [
        `POST /v2/projects/{project_id}/${t}/delete`,
        project('editor', {
          destructive: true,
          build: (c: CellContext) => ({ body: { log_stream_id: c.w.log_stream_id } }),
        }),
      ],
    ]),
  ),
  'POST /v2/projects/{project_id}/export_records': project('viewer', {
    build: (c) => ({ body: { log_stream_id: c.w.log_stream_id, root_type: 'trace' } }),
  }),
  'PATCH /v2/projects/{project_id}': project('editor', { build: () => ({ body: { retention_days: 3650 } }) }),
  'PATCH /v2/projects/{project_id}/log_streams/{log_stream_id}': project('editor', {
    build: (c) => ({ path: { log_stream_id: c.w.log_stream_id }, body: { retention_days: null } }),
  }),

  // --- trends dashboards (another helper's) -----------------------------------------------------
  'PUT /v2/projects/{project_id}/log_streams/{log_stream_id}/trends': project('editor', {
    build: () => ({ body: { name: uniq('dash') }, query: {} }),
  }),
  'GET /v2/projects/{project_id}/log_streams/{log_stream_id}/trends': project('viewer'),
  'POST /v2/projects/{project_id}/log_streams/{log_stream_id}/trends': project('editor', {
    build: () => ({ body: { name: uniq('dash') } }),
  }),
  'GET /v2/projects/{project_id}/log_streams/{log_stream_id}/trends/{dashboard_id}': project('viewer'),
  'DELETE /v2/projects/{project_id}/log_streams/{log_stream_id}/trends/{dashboard_id}': project('editor', {
    destructive: true,
  }),
  'POST /v2/projects/{project_id}/log_streams/{log_stream_id}/trends/{dashboard_id}/query': project(
    'viewer',
    {
      build: () => ({ body: {} }),
    },
  ),
  'POST /v2/projects/{project_id}/log_streams/{log_stream_id}/trends/{dashboard_id}/widgets': project(
    'editor',
    {
      build: () => ({ body: WIDGET }),
    },
  ),
  'PUT /v2/projects/{project_id}/log_streams/{log_stream_id}/trends/{dashboard_id}/widgets/{widget_id}':
    project('editor', {
      build: async (c) => ({
        path: { widget_id: await dashboardPart(c, 'widgets') },
        body: { name: 'renamed' },
      }),
    }),
  'DELETE /v2/projects/{project_id}/log_streams/{log_stream_id}/trends/{dashboard_id}/widgets/{widget_id}':
    project('editor', {
      destructive: true,
      build: async (c) => ({ path: { widget_id: await dashboardPart(c, 'widgets') } }),
    }),
  'POST /v2/projects/{project_id}/log_streams/{log_stream_id}/trends/{dashboard_id}/sections': project(
    'editor',
    {
      build: () => ({ body: { name: uniq('section') } }),
    },
  ),
  'PUT /v2/projects/{project_id}/log_streams/{log_stream_id}/trends/{dashboard_id}/sections/{section_id}':
    project('editor', {
      build: async (c) => ({
        path: { section_id: await dashboardPart(c, 'sections') },
        body: { name: 'renamed' },
      }),
    }),
  'DELETE /v2/projects/{project_id}/log_streams/{log_stream_id}/trends/{dashboard_id}/sections/{section_id}':
    project('editor', {
      destructive: true,
      build: async (c) => ({ path: { section_id: await dashboardPart(c, 'sections') } }),
    }),

  // --- integrations and Signals (another helper's) ---------------------------------------------------
  'PUT /v2/integrations/example_gateway': {
    ...self,
    build: () => ({
      body: { endpoint: 'https://gateway.example.com/v1', use_case: 'chat', token: uniq('tok') },
    }),
  },
  'GET /v2/integrations': self,
  'GET /v2/integrations/{integration_id}': integration('viewer'),
  'DELETE /v2/integrations/{integration_id}': integration('owner', { destructive: true }),
  'PATCH /v2/integrations/{integration_id}/users/{user_id}': integration('owner', {
    build: (c) => ({ path: { user_id: c.w.viewer.id }, body: { role: 'viewer' } }),
  }),
  'PATCH /v2/integrations/{integration_id}/groups/{group_id}': integration('owner', {
    build: () => ({ body: { role: 'viewer' } }),
  }),
  'POST /v2/integrations/{integration_id}/users': integration('owner', {
    build: (c) => ({ body: [{ user_id: c.w.bystander.id, role: 'viewer' }] }),
  }),
  'POST /v2/integrations/{integration_id}/groups': integration('owner', {
    build: (c) => ({ body: [{ group_id: c.w.group_id, role: 'viewer' }] }),
  }),
  'GET /v2/integrations/{integration_id}/users': integration('viewer'),
  'GET /v2/integrations/{integration_id}/groups': integration('viewer'),
  'DELETE /v2/integrations/{integration_id}/users/{user_id}': integration('owner', {
    destructive: true,
    build: async (c) => {
      // One integration per user lives across worlds: share it with the bystander again first.
      const url = `/v2/integrations/${c.w.ids.integration_id}/users`;
      await c.s.call('POST', url, [{ user_id: c.w.bystander.id, role: 'viewer' }], c.w.owner.key);
      return { path: { user_id: c.w.bystander.id } };
    },
  }),
  'DELETE /v2/integrations/{integration_id}/groups/{group_id}': integration('owner', {
    destructive: true,
    build: async (c) => {
      const url = `/v2/integrations/${c.w.ids.integration_id}/groups`;
      await c.s.call('POST', url, [{ group_id: c.w.group_id, role: 'viewer' }], c.w.owner.key);
      return {};
    },
  }),

  // --- OpenTelemetry ingestion (another helper's): the target is named in headers -------------------
  ...Object.fromEntries(
    OTEL_PATHS.map((p) => [
      `POST ${p}`,
      project('editor', {
        build: (c: CellContext) => ({
          headers: { projectid: c.w.ids.project_id, logstreamid: c.w.log_stream_id },
          contentType: 'application/json',
          body: { resourceSpans: [] },
        }),
      }),
    ]),
  ),
  // --- model prices and costs -------------------------------------------------------------------
  'POST /v2/projects/{project_id}/model_prices': project('editor', {
    build: () => ({
      body: { model_pattern: 'gpt-.*', input_price_per_million: 1, output_price_per_million: 2 },
    }),
  }),
  'GET /v2/projects/{project_id}/model_prices': project('viewer'),
  'PATCH /v2/projects/{project_id}/model_prices/{price_id}': project('editor', {
    build: async (c) => ({ path: { price_id: await modelPrice(c) }, body: { output_price_per_million: 3 } }),
  }),
  'DELETE /v2/projects/{project_id}/model_prices/{price_id}': project('editor', {
    destructive: true,
    build: async (c) => ({ path: { price_id: await modelPrice(c) } }),
  }),
  'GET /v2/projects/{project_id}/runs/{run_id}/models_without_price': project('viewer', {
    build: (c) => ({ path: { run_id: c.w.log_stream_id } }),
  }),
  'POST /v2/projects/{project_id}/recompute-metrics': project('editor', {
    build: (c) => ({ body: { log_stream_id: c.w.log_stream_id } }),
  }),
  'GET /v2/projects/{project_id}/runs/{run_id}/signals/configuration': project('viewer'),
  'PUT /v2/projects/{project_id}/runs/{run_id}/signals/configuration': project('editor', {
    build: () => ({ body: { run_mode: 'ON_DEMAND' } }),
  }),

  // --- annotations: templates (editors manage, viewers read), annotations (annotators), queues
  // (editors manage; annotators see those they are members of, as the world's annotator is) -------
  'GET /v2/projects/{project_id}/annotation_templates': project('viewer'),
  'POST /v2/projects/{project_id}/annotation_templates': project('editor', {
    build: () => ({ body: { name: uniq('template'), type: 'stars' } }),
  }),
  'PATCH /v2/projects/{project_id}/annotation_templates/{template_id}': project('editor', {
    build: () => ({ body: { name: uniq('renamed') } }),
  }),
  'DELETE /v2/projects/{project_id}/annotation_templates/{template_id}': project('editor', {
    destructive: true,
  }),
  'PUT /v2/projects/{project_id}/records/{record_id}/annotations/{template_id}': project('annotator', {
    build: () => ({ body: { value: true, explanation: 'ok' } }),
  }),
  'DELETE /v2/projects/{project_id}/records/{record_id}/annotations/{template_id}': project('annotator', {
    destructive: true,
    build: async (c) => {
      // The caller's own annotation to remove (the owner's for callers without a working key).
      const { project_id, record_id, template_id } = c.w.ids;
      const url = `/v2/projects/${project_id}/records/${record_id}/annotations/${template_id}`;
      await c.s.call('PUT', url, { value: false }, c.caller.key ?? c.w.owner.key);
      return { query: {} };
    },
  }),
  'GET /v2/projects/{project_id}/annotation_queues': project('annotator'),
  'POST /v2/projects/{project_id}/annotation_queues': project('editor', {
    build: (c) => ({ body: { name: uniq('queue'), template_ids: [c.w.ids.template_id] } }),
  }),
  'GET /v2/projects/{project_id}/annotation_queues/{queue_id}': project('annotator'),
  'PATCH /v2/projects/{project_id}/annotation_queues/{queue_id}': project('editor', {
    build: () => ({ body: { name: uniq('renamed') } }),
  }),
  'DELETE /v2/projects/{project_id}/annotation_queues/{queue_id}': project('editor', { destructive: true }),
  'POST /v2/projects/{project_id}/annotation_queues/{queue_id}/records': project('editor', {
    build: (c) => ({ body: { record_ids: [c.w.ids.record_id] } }),
  }),
  'DELETE /v2/projects/{project_id}/annotation_queues/{queue_id}/records': project('editor', {
    build: (c) => ({ body: { record_ids: [c.w.ids.record_id] } }),
  }),
  'GET /v2/projects/{project_id}/annotation_queues/{queue_id}/progress': project('annotator'),
  'POST /v2/projects/{project_id}/annotation_queues/{queue_id}/records/search': project('annotator', {
    build: () => ({ body: { filters: [{ type: 'fully_annotated' }] } }),
  }),

  // --- prompt templates: the world's is a global template shared with its project, so the project
  // routes and the global ones both follow the caller's role on the project -------------------------
  'GET /v2/projects/{project_id}/templates': project('viewer'),
  'POST /v2/projects/{project_id}/templates': project('editor', {
    build: () => ({ body: { name: uniq('prompt'), template: 'Hello {{name}}' } }),
  }),
  'GET /v2/projects/{project_id}/templates/versions': project('viewer', {
    build: () => ({ query: { template_name: 'world prompt' } }),
  }),
  'GET /v2/projects/{project_id}/templates/{template_id}': project('viewer', { build: promptPath() }),
  'DELETE /v2/projects/{project_id}/templates/{template_id}': project('editor', {
    destructive: true,
    build: promptPath(),
  }),
  'POST /v2/projects/{project_id}/templates/{template_id}/versions': project('editor', {
    build: (c) => ({ ...promptPath()(c), body: { template: 'Hi {{name}}' } }),
  }),
  'GET /v2/projects/{project_id}/templates/{template_id}/versions/{version}': project('viewer', {
    build: promptPath(0),
  }),
  'PUT /v2/projects/{project_id}/templates/{template_id}/versions/{version}': project('editor', {
    build: promptPath(0),
  }),
  'POST /v2/templates': project('editor', {
    build: (c) => ({
      query: { project_id: c.w.ids.project_id },
      body: { name: uniq('prompt'), template: [{ role: 'user', content: 'Hello {{name}}' }] },
    }),
  }),
  'POST /v2/templates/query': self,
  'GET /v2/templates/{template_id}': project('viewer', { build: promptPath() }),
  'PATCH /v2/templates/{template_id}': project('editor', {
    build: (c) => ({ ...promptPath()(c), body: { name: uniq('renamed') } }),
  }),
  'DELETE /v2/templates/{template_id}': project('editor', { destructive: true, build: promptPath() }),
  'POST /v2/templates/{template_id}/versions': project('editor', {
    build: (c) => ({ ...promptPath()(c), body: { template: 'Hi {{name}}' } }),
  }),
  'POST /v2/templates/{template_id}/versions/query': project('viewer', { build: promptPath() }),
  'GET /v2/templates/{template_id}/versions/{version}': project('viewer', { build: promptPath(0) }),
  'PUT /v2/templates/{template_id}/versions/{version}': project('editor', { build: promptPath(0) }),
  'POST /v2/render_template': {
    ...self,
    build: () => ({ body: { template: 'Hi {{name}}', data: { input_strings: ['{"name":"Ada"}'] } } }),
  },

  // --- model integrations by kind, their models, model calls and spend, the playground ---------------
  ...Object.fromEntries(
    (
      [
        ['openai', {}],
        ['anthropic', {}],
        ['azure', { endpoint: 'https://azure.example.com', deployments: { 'gpt-4o': 'gpt4o' } }],
        ['custom', { endpoint: 'https://custom.example.com/v1', models: ['m1'] }],
      ] as const
    ).map(([kind, extra]) => [
      `PUT /v2/integrations/${kind}`,
      { ...self, build: () => ({ body: { token: uniq('tok'), ...extra } }) },
    ]),
  ),
  'GET /v2/integrations/available': self,
  // Viewers of an integration may use it (the playground and Signals do too): its status pings it.
  'GET /v2/integrations/{integration_id}/status': integration('viewer'),
  'PUT /v2/integrations/{integration_id}/select': integration('viewer', {
    build: () => ({ body: undefined }),
  }),
  'GET /v2/llm_integrations': self,
  // By kind: the caller's own integration of that kind (or the one they selected).
  'GET /v2/llm_integrations/{name}/models': { ...self, build: ownCustom },
  'GET /v2/llm_integrations/{name}/scorer_models': { ...self, build: ownCustom },
  'GET /v2/projects/{project_id}/model_calls': project('viewer'),
  'GET /v2/projects/{project_id}/model_calls/spend': project('viewer'),
  // Editors of the project, through an integration they may see (the world's is shared with them).
  'POST /v2/projects/{project_id}/playground/runs': project('editor', {
    build: (c) => ({
      body: {
        integration_id: c.w.ids.integration_id,
        model: 'm',
        messages: [{ role: 'user', content: 'Hi {{name}}' }],
        variables: { name: 'Ada' },
      },
    }),
  }),

  // --- Signals runs and signals ---------------------------------------------------------------------
  'GET /v2/projects/{project_id}/runs/{run_id}/signals/runs': project('viewer'),
  'POST /v2/projects/{project_id}/runs/{run_id}/signals/runs': project('editor', {
    build: () => ({ body: undefined }),
  }),
  'GET /v2/projects/{project_id}/runs/{run_id}/signals/runs/{signal_run_id}': project('viewer'),
  'GET /v2/projects/{project_id}/runs/{run_id}/signals': project('viewer'),
  'GET /v2/projects/{project_id}/runs/{run_id}/signals/{signal_id}': project('viewer'),
  'PATCH /v2/projects/{project_id}/runs/{run_id}/signals/{signal_id}': project('editor', {
    build: () => ({ body: { status: 'dismissed' } }),
  }),

  // --- alerts (viewers read, editors change) and webhooks (editors only: they hold a target URL) -----
  'GET /v2/projects/{project_id}/log_streams/{log_stream_id}/alerts': project('viewer'),
  'POST /v2/projects/{project_id}/log_streams/{log_stream_id}/alerts': project('editor', {
    build: () => ({ body: { ...ALERT, name: uniq('alert') } }),
  }),
  'POST /v2/projects/{project_id}/log_streams/{log_stream_id}/alerts/preview': project('viewer', {
    build: () => ({ body: ALERT_PREVIEW }),
  }),
  'GET /v2/projects/{project_id}/log_streams/{log_stream_id}/alerts/{alert_id}': project('viewer'),
  'DELETE /v2/projects/{project_id}/log_streams/{log_stream_id}/alerts/{alert_id}': project('editor', {
    destructive: true,
  }),
  'PATCH /v2/projects/{project_id}/log_streams/{log_stream_id}/alerts/{alert_id}': project('editor', {
    build: () => ({ body: { threshold: 2e9 } }),
  }),
  'GET /v2/projects/{project_id}/log_streams/{log_stream_id}/alerts/{alert_id}/history': project('viewer'),
  'GET /v2/projects/{project_id}/webhooks': project('editor'),
  'POST /v2/projects/{project_id}/webhooks': project('editor', {
    build: () => ({ body: { url: 'https://hooks.example.com/spanbase' } }),
  }),
  'DELETE /v2/projects/{project_id}/webhooks/{webhook_id}': project('editor', { destructive: true }),
  'PATCH /v2/projects/{project_id}/webhooks/{webhook_id}': project('editor', {
    build: () => ({ body: { enabled: false } }),
  }),
  'GET /v2/projects/{project_id}/webhooks/{webhook_id}/deliveries': project('editor'),

  // --- scorers: global, read by everyone signed in, changed by their creator or an admin; run scorer
  // settings follow the project (viewers read, editors change) -----------------------------------------
  'POST /v2/scorers': { ...self, build: () => ({ body: { name: uniq('scorer'), scorer_type: 'rule' } }) },
  'POST /v2/scorers/list': { ...self, build: () => ({ body: {} }) },
  'GET /v2/scorers/tags': self,
  'GET /v2/scorers/{id}': { ...self, build: scorerPath() },
  'GET /v2/scorers/{id}/version': { ...self, build: scorerPath() },
  'GET /v2/scorers/{id}/versions': { ...self, build: scorerPath() },
  'PATCH /v2/scorers/{id}': { ...creator, build: (c) => ({ ...scorerPath()(c), body: { tags: ['t'] } }) },
  'DELETE /v2/scorers/{id}': { ...creator, destructive: true, build: scorerPath() },
  'POST /v2/scorers/{id}/version/llm': {
    ...creator,
    build: (c) => ({ ...scorerPath('llm')(c), body: { instructions: 'Is it polite?' } }),
  },
  'POST /v2/scorers/{id}/version/rule': {
    ...creator,
    build: (c) => ({ ...scorerPath()(c), body: RULE_VERSION }),
  },
  'POST /v2/scorers/{id}/versions/{version}/restore': {
    ...creator,
    build: (c) => ({ path: { id: c.w.ids.scorer_id, version: '1' } }),
  },
  // Code scorers are refused to everyone signed in (nothing runs users' code); the task shape is answered.
  'POST /v2/scorers/code/validate': self,
  'GET /v2/scorers/code/validate/{task_id}': self,
  'POST /v2/scorers/{id}/version/code': { rule: { kind: 'refused', status: 422 }, build: scorerPath() },
  'GET /v2/projects/{project_id}/runs/{run_id}/scorer-settings': project('viewer'),
  'POST /v2/projects/{project_id}/runs/{run_id}/scorer-settings': project('editor', {
    build: (c) => ({ body: { scorers: [{ id: c.w.ids.scorer_id, scorer_type: 'rule' }] } }),
  }),
  'PATCH /v2/projects/{project_id}/runs/{run_id}/scorer-settings': project('editor', {
    build: (c) => ({ body: { scorers: [{ id: c.w.ids.scorer_id, scorer_type: 'rule' }] } }),
  }),
  'GET /v2/projects/{project_id}/runs/{run_id}/scorer-settings/status': project('viewer'),
  // A preview calls the model (spends the project's money): editors, through an integration they see.
  'POST /v2/projects/{project_id}/scorers/{id}/preview': project('editor', {
    build: (c) => ({
      path: { id: c.w.ids.llm_scorer_id },
      body: {
        record_ids: [c.w.ids.record_id],
        integration_id: c.w.ids.integration_id,
        version: { user_prompt: 'Is the answer right?', num_judges: 1 },
      },
    }),
  }),
  'POST /v2/projects/{project_id}/recompute_metrics': project('editor', {
    build: async (c) => {
      // Only scorers enabled on the run are recomputed: the owner enables the world's.
      const url = `/v2/projects/${c.w.ids.project_id}/runs/${c.w.log_stream_id}/scorer-settings`;
      const on = await c.s.call(
        'POST',
        url,
        { scorers: [{ id: c.w.ids.scorer_id, scorer_type: 'rule' }] },
        c.w.owner.key,
      );
      assert.equal(on.status, 200, on.text);
      return { body: { log_stream_id: c.w.log_stream_id, scorer_ids: [c.w.ids.scorer_id] } };
    },
  }),

  // --- datasets: the world's is the owner's, used by the world's project, so a caller's role on it is
  // their role on the project (its creator, the owner, may delete and share it) -------------------------
  'GET /v2/datasets': self,
  'POST /v2/datasets': {
    ...self,
    build: () => ({ contentType: 'application/json', body: { name: uniq('ds'), rows: [{ input: 'a' }] } }),
  },
  'POST /v2/datasets/query': { ...self, build: () => ({ body: {} }) },
  'GET /v2/datasets/{dataset_id}': project('viewer'),
  'DELETE /v2/datasets/{dataset_id}': project('owner', { destructive: true }),
  'PATCH /v2/datasets/{dataset_id}': project('editor', {
    build: () => ({ body: { name: uniq('renamed') } }),
  }),
  'GET /v2/datasets/{dataset_id}/content': project('viewer'),
  'PATCH /v2/datasets/{dataset_id}/content': project('editor', {
    build: () => ({ body: { edits: [{ edit_type: 'append_row', values: { input: 'b' } }] } }),
  }),
  'POST /v2/datasets/{dataset_id}/versions/query': project('viewer', { build: () => ({ body: {} }) }),
  'GET /v2/datasets/{dataset_id}/versions/{version_index}/content': project('viewer', {
    build: () => ({ path: { version_index: '1' } }),
  }),
  'PATCH /v2/datasets/{dataset_id}/versions/{version_index}': project('editor', {
    build: () => ({ path: { version_index: '1' }, body: { name: uniq('v') } }),
  }),
  'GET /v2/datasets/{dataset_id}/projects': project('viewer'),
  'POST /v2/datasets/{dataset_id}/projects': project('owner', {
    build: (c) => ({ body: { project_id: c.w.ids.project_id } }),
  }),
  'DELETE /v2/datasets/{dataset_id}/projects/{project_id}': project('owner', { destructive: true }),
};

// ---------------------------------------------------------------------------------------------
// Principals and the world each route is checked in.

type Auth = Record<string, string> | null;

interface Person {
  id: string;
  email: string;
  key: string;
  password: string;
}

interface Principal {
  name: string;
  /** How this principal authenticates (various schemes, to cover all four). */
  auth: Auth;
  /** The person behind it (null for the four credential faults). */
  id: string | null;
  key: string | null;
  /** 'cred' for the four credential faults; 'stranger', a collaborator role, or 'admin'. */
  as: 'cred' | 'stranger' | Role | 'admin';
}

interface World {
  owner: Person;
  viewer: Person;
  annotator: Person;
  editor: Person;
  stranger: Person;
  bystander: Person;
  group_id: string;
  ids: Record<string, string>;
  log_stream_id: string;
}

interface CellContext {
  s: TestServer;
  w: World;
  caller: Principal;
  op: Operation;
}

function expected(rule: Rule, p: Principal): number | '2xx' {
  if (p.as === 'cred') return 401;
  switch (rule.kind) {
    case 'public':
    case 'self':
      return '2xx';
    case 'admin':
      return p.as === 'admin' ? '2xx' : 403;
    case 'creator':
      return p.as === 'admin' || p.as === 'owner' ? '2xx' : 403;
    case 'refused':
      return rule.status;
    case 'project':
    case 'integration':
      if (p.as === 'admin') return '2xx';
      if (p.as === 'stranger') return 404;
      return atLeast(p.as, rule.role) ? '2xx' : 403;
  }
}

function seedOf(text: string): number {
  let h = 2166136261;
  for (const ch of text) h = Math.imul(h ^ ch.charCodeAt(0), 16777619) >>> 0;
  return h % 2 ** 31;
}

const summary: string[] = [];

for (const store of storesUnderTest()) {
  describe(`authorization matrix [${store}]`, () => {
    let s: TestServer;
    let ops: Operation[];
    let resolver: RefResolver;
    let principals: Principal[];
    let people: Omit<World, 'group_id' | 'ids' | 'log_stream_id'>;
    let groupId: string;

    before(async () => {
      s = await startTestServer(store);
      const doc: JsonSchema = (await s.call('GET', '/openapi.json', undefined, null)).body;
      ops = operations(doc);
      resolver = new RefResolver(doc);
      const mkPerson = async (): Promise<Person> => {
        const u = await s.user();
        return { id: u.id, email: u.email, key: u.key, password: u.password };
      };
      people = {
        owner: await mkPerson(),
        viewer: await mkPerson(),
        annotator: await mkPerson(),
        editor: await mkPerson(),
        stranger: await mkPerson(),
        bystander: await mkPerson(),
      };
      groupId = (await s.call('POST', '/v2/groups', { name: 'authz-group' })).body.id;

      // The four credential faults, all aimed at the owner.
      const revoked = await s.call(
        'POST',
        '/v2/users/api_keys',
        { description: 'revoked' },
        people.owner.key,
      );
      await s.call('DELETE', `/v2/users/api_keys/${revoked.body.id}`, undefined, people.owner.key);
      const expiredToken = await new SignJWT({})
        .setProtectedHeader({ alg: 'HS256' })
        .setSubject(people.owner.id)
        .setIssuedAt(Math.floor(Date.now() / 1000) - 7200)
        .setExpirationTime(Math.floor(Date.now() / 1000) - 60)
        .sign(s.running.services.keyring.derive('jwt'));
      const bearer = async (key: string) =>
        (await s.call('POST', '/v2/login/api_key', { api_key: key }, null)).body.access_token as string;
      const basic = (p: Person) => `Basic ${Buffer.from(`${p.email}:${p.password}`).toString('base64')}`;
      principals = [
        { name: 'no credentials', auth: null, id: null, key: null, as: 'cred' },
        {
          name: 'wrong key',
          auth: { 'service-api-key': `sb_${'x'.repeat(43)}` },
          id: null,
          key: null,
          as: 'cred',
        },
        {
          name: 'revoked key',
          auth: { 'service-api-key': revoked.body.api_key },
          id: null,
          key: null,
          as: 'cred',
        },
        {
          name: 'expired token',
          auth: { authorization: `Bearer ${expiredToken}` },
          id: null,
          key: null,
          as: 'cred',
        },
        {
          name: "another user's project",
          auth: { 'service-api-key': people.stranger.key },
          id: people.stranger.id,
          key: people.stranger.key,
          as: 'stranger',
        },
        {
          name: 'viewer',
          auth: { authorization: `Bearer ${await bearer(people.viewer.key)}` },
          id: people.viewer.id,
          key: people.viewer.key,
          as: 'viewer',
        },
        {
          name: 'annotator',
          auth: { 'platform-ao-api-key': people.annotator.key },
          id: people.annotator.id,
          key: people.annotator.key,
          as: 'annotator',
        },
        {
          name: 'editor',
          auth: { authorization: basic(people.editor) },
          id: people.editor.id,
          key: people.editor.key,
          as: 'editor',
        },
        {
          name: 'owner',
          auth: { 'service-api-key': people.owner.key },
          id: people.owner.id,
          key: people.owner.key,
          as: 'owner',
        },
        {
          name: 'admin',
          auth: { 'service-api-key': s.adminKey },
          id: s.adminId,
          key: s.adminKey,
          as: 'admin',
        },
      ];
    });
    after(() => s?.close());

    const has = (key: string) => ops.some((o) => o.key === key);

    /** A project owned by `owner`, shared with viewer, annotator and editor, with whatever exists to point at. */
    async function makeWorld(): Promise<World> {
      const { owner } = people;
      const ok = async (method: string, url: string, body?: unknown, key = owner.key) => {
        const r = await s.call(method, url, body, key);
        assert.ok(r.status < 300, `world: ${method} ${url} → ${r.status} ${r.text}`);
        return r.body;
      };
      const p = await ok('POST', '/v2/projects', { name: uniq('authz') });
      const ls = await ok('POST', `/v2/projects/${p.id}/log_streams`, { name: 'ls' });
      const ex = await ok('POST', `/v2/projects/${p.id}/experiments`, { name: 'ex' });
      for (const role of ['viewer', 'annotator', 'editor'] as const)
        await ok('POST', `/v2/projects/${p.id}/collaborators`, { user_id: people[role].id, role });
      const ids: Record<string, string> = {
        project_id: p.id,
        log_stream_id: ls.id,
        run_id: ls.id,
        experiment_id: ex.id,
        group_id: groupId,
        user_id: people.bystander.id,
      };
      if (has('POST /v2/projects/{project_id}/sessions')) {
        const session = await ok('POST', `/v2/projects/${p.id}/sessions`, {
          log_stream_id: ls.id,
          name: 'world',
        });
        ids.session_id = session.id;
      }
      if (has('POST /v2/projects/{project_id}/traces')) {
        const batch = {
          ...knownBatch(ls.id, 1, 'world'),
          ...(ids.session_id ? { session_id: ids.session_id } : {}),
        };
        const r = await ok('POST', `/v2/projects/${p.id}/traces`, batch);
        ids.trace_id = batch.traces[0].id;
        ids.span_id = batch.traces[0].spans[0].id;
        if (r.session_id && !ids.session_id) ids.session_id = r.session_id;
      }
      if (ids.trace_id && has('POST /v2/projects/{project_id}/annotation_templates')) {
        // A template, the world's trace to annotate, and a queue of both with the annotator as member.
        const t = await ok('POST', `/v2/projects/${p.id}/annotation_templates`, {
          name: 'world',
          type: 'thumbs',
        });
        ids.template_id = t.id;
        ids.record_id = ids.trace_id;
        const q = await ok('POST', `/v2/projects/${p.id}/annotation_queues`, {
          name: 'world',
          template_ids: [t.id],
          user_ids: [people.annotator.id],
        });
        ids.queue_id = q.id;
        await ok('POST', `/v2/projects/${p.id}/annotation_queues/${q.id}/records`, {
          record_ids: [ids.trace_id],
        });
      }
      if (has('POST /v2/templates')) {
        const t = await ok('POST', `/v2/templates?project_id=${p.id}`, {
          name: uniq('world prompt'),
          template: 'Hello {{name}}',
        });
        ids.prompt_template_id = t.id;
        // By name in the project: a project template of that name.
        await ok('POST', `/v2/projects/${p.id}/templates`, { name: 'world prompt', template: 'Hi' });
      }
      if (has('PUT /v2/projects/{project_id}/log_streams/{log_stream_id}/trends')) {
        const d = await ok('PUT', `/v2/projects/${p.id}/log_streams/${ls.id}/trends`, { name: 'world' });
        ids.trends_dashboard_id = d.id;
        ids.dashboard_id = d.id;
      }
      if (has('PUT /v2/integrations/example_gateway')) {
        // One integration per user: the owner's, shared like the project.
        const i = await ok('PUT', '/v2/integrations/example_gateway', {
          endpoint: 'https://gateway.example.com/v1',
          use_case: 'chat',
          token: uniq('provider-token'),
        });
        ids.integration_id = i.id;
        if (has('POST /v2/integrations/{integration_id}/users')) {
          await ok(
            'POST',
            `/v2/integrations/${i.id}/users`,
            (['viewer', 'annotator', 'editor'] as const).map((role) => ({ user_id: people[role].id, role })),
          );
        }
        if (has('POST /v2/integrations/{integration_id}/groups')) {
          await ok('POST', `/v2/integrations/${i.id}/groups`, [{ group_id: groupId, role: 'viewer' }]);
        }
      }
      if (has('POST /v2/datasets')) {
        // The owner's dataset, used by the project.
        const d = await ok('POST', '/v2/datasets', {
          name: uniq('world ds'),
          rows: [{ input: 'a' }],
          project_id: p.id,
        });
        ids.dataset_id = d.id;
      }
      if (has('POST /v2/projects/{project_id}/log_streams/{log_stream_id}/alerts')) {
        const a = await ok('POST', `/v2/projects/${p.id}/log_streams/${ls.id}/alerts`, {
          ...ALERT,
          name: 'world',
        });
        ids.alert_id = a.id;
      }
      if (has('POST /v2/projects/{project_id}/webhooks')) {
        const h = await ok('POST', `/v2/projects/${p.id}/webhooks`, {
          url: 'https://hooks.example.com/world',
        });
        ids.webhook_id = h.id;
      }
      if (has('POST /v2/scorers')) {
        // The owner's scorers: a rule one with a version, and an llm one.
        const r = await ok('POST', '/v2/scorers', { name: uniq('world rule'), scorer_type: 'rule' });
        await ok('POST', `/v2/scorers/${r.id}/version/rule`, RULE_VERSION);
        ids.scorer_id = r.id;
        const l = await ok('POST', '/v2/scorers', { name: uniq('world judge'), scorer_type: 'llm' });
        ids.llm_scorer_id = l.id;
      }
      if (has('POST /v2/projects/{project_id}/runs/{run_id}/signals/runs')) {
        const r = await ok('POST', `/v2/projects/${p.id}/runs/${ls.id}/signals/runs`);
        ids.signal_run_id = r.data.id;
        // A signal as a run keeps it (made by a model, which the matrix does not run).
        const now = Date.now() * 1000;
        ids.signal_id = crypto.randomUUID();
        await (s.running.services.signalRuns as any).repo.insertSignal({
          id: ids.signal_id,
          project_id: p.id,
          run_id: ls.id,
          first_signal_run_id: r.data.id,
          last_signal_run_id: r.data.id,
          fingerprint: uniq('fp'),
          source: 'errors',
          title: 'world signal',
          observation: 'o',
          details: 'd',
          suggested_action: 'a',
          severity: 'LOW',
          occurrences: '[]',
          examples: '[]',
          occurrence_count: 0,
          runs_seen: 1,
          status: 'open',
          first_seen: now,
          last_seen: now,
          updated_at: now,
        });
      }
      return { ...people, group_id: groupId, ids, log_stream_id: ls.id };
    }

    async function requestFor(op: Operation, rr: RouteRule, w: World, caller: Principal): Promise<Req> {
      const ct = op.body ? (Object.keys(op.body.content)[0] ?? 'application/json') : 'application/json';
      const schema = op.body?.content[ct];
      const pool = (name: string) =>
        name === 'name' ? [uniq('x')] : w.ids[name] ? [w.ids[name]] : undefined;
      const minimal = (sch: JsonSchema, tag: string) =>
        fc.sample(validArb(sch, { resolver, pool, maxDepth: 0, maxString: 12 }), {
          numRuns: 1,
          seed: seedOf(op.key + tag),
        })[0];
      const path: Record<string, string> = {};
      for (const p of op.pathParams) path[p.name] = w.ids[p.name] ?? crypto.randomUUID();
      const query: Record<string, unknown> = {};
      for (const q of op.queryParams) if (q.required) put(query, q.name, minimal(q.schema, q.name));
      const built = rr.build ? await rr.build({ s, w, caller, op }) : {};
      return {
        path: { ...path, ...(built.path ?? {}) },
        query: { ...query, ...(built.query ?? {}) },
        body: 'body' in built ? built.body : schema ? minimal(schema, 'body') : undefined,
        contentType: built.contentType ?? ct,
        headers: built.headers,
      };
    }

    async function send(op: Operation, req: Req, caller: Principal) {
      const headers: Record<string, string> = { ...(req.headers ?? {}), ...(caller.auth ?? {}) };
      let payload: string | undefined;
      if (req.body !== undefined) {
        headers['content-type'] = req.contentType;
        payload =
          req.contentType === 'application/x-www-form-urlencoded'
            ? queryString(req.body as Record<string, unknown>)
            : JSON.stringify(req.body);
      }
      const res = await s.running.app.inject({
        method: op.method as any,
        url: fillPath(op.path, req.path, req.query),
        headers,
        payload,
      });
      return { status: res.statusCode, text: res.body, headers: res.headers };
    }

    test('every served route has an authorization rule', () => {
      const missing = ops.filter((o) => !RULES[o.key]).map((o) => o.key);
      assert.deepEqual(
        missing,
        [],
        `routes without a rule in RULES (test/api/authz.test.ts): ${missing.join(', ')}`,
      );
    });

    test('every route × every principal answers as its rule says', async (t) => {
      const pending = Object.keys(RULES).filter((k) => !has(k));
      if (pending.length) t.diagnostic(`rules for routes not served yet: ${pending.join(', ')}`);
      const rows: string[] = [];
      let cells = 0;
      let readWorld: World | undefined;
      for (const op of ops) {
        const rr = RULES[op.key];
        if (!rr) continue;
        await t.test(op.key, async () => {
          const faults: string[] = [];
          const statuses: string[] = [];
          // A read changes nothing: reads share one world (building one per route took most of the
          // matrix's time on PostgreSQL); a write gets its own. Integrations are one per holder and
          // kind, so each later world replaces the shared world's: their reads get their own too.
          const reads =
            op.method.toUpperCase() === 'GET' && !rr.destructive && !op.path.startsWith('/v2/integrations');
          if (reads && !readWorld) readWorld = await makeWorld();
          let world = reads && readWorld ? readWorld : await makeWorld();
          // Refusals first, so that a wrong success cannot spoil the allowed cells that follow.
          const order = [...principals].sort(
            (a, b) => Number(expected(rr.rule, a) === '2xx') - Number(expected(rr.rule, b) === '2xx'),
          );
          const results = new Map<string, number>();
          for (const p of order) {
            const want = expected(rr.rule, p);
            if (rr.rule.kind === 'public') continue;
            if (rr.destructive && want === '2xx') world = await makeWorld();
            const req = await requestFor(op, rr, world, p);
            const r = await send(op, req, p);
            cells++;
            results.set(p.name, r.status);
            const problem = contractProblem(r.status, r.text, r.headers['content-type'] as string);
            const ok = want === '2xx' ? r.status >= 200 && r.status < 300 : r.status === want;
            if (problem || !ok)
              faults.push(
                `${p.name}: expected ${want}, got ${r.status}${problem ? ` (${problem})` : ''}: ${r.text.slice(0, 200)}`,
              );
            if (want === 401 && r.status === 401 && !r.headers['www-authenticate'])
              faults.push(`${p.name}: a 401 without WWW-Authenticate`);
          }
          if (rr.rule.kind === 'public') {
            // Public routes: whoever asks, never a 5xx.
            const req = await requestFor(op, rr, world, principals[0]);
            for (const p of principals) {
              const r = await send(op, req, p);
              cells++;
              results.set(p.name, r.status);
              if (r.status >= 500) faults.push(`${p.name}: ${r.status}`);
            }
          }
          for (const p of principals) statuses.push(String(results.get(p.name) ?? '-').padStart(4));
          rows.push(`${statuses.join('')}  ${op.key}`);
          assert.deepEqual(faults, [], `${op.key} (${JSON.stringify(rr.rule)}):\n  ${faults.join('\n  ')}`);
        });
      }
      const header = principals.map((_, i) => `  P${i}`).join('');
      summary.push(
        `authz[${store}]: ${ops.length} routes × ${principals.length} principals, ${cells} cells, ${pending.length} rules pending`,
        `  ${principals.map((p, i) => `P${i}=${p.name}`).join(', ')}`,
        `${header}`,
        ...rows,
      );
    });

    test('a role given through a group counts like a direct one, and roles never leak across projects', async () => {
      const w = await makeWorld();
      const member = await s.user();
      await s.call('POST', `/v2/groups/${groupId}/members`, [{ user_id: member.id }]);
      const pid = w.ids.project_id;
      await s.call(
        'POST',
        `/v2/projects/${pid}/collaborators`,
        { group_id: groupId, role: 'editor' },
        w.owner.key,
      );
      const created = await s.call(
        'POST',
        `/v2/projects/${pid}/log_streams`,
        { name: 'by-group' },
        member.key,
      );
      assert.equal(created.status, 200, created.text);
      const other = await makeWorld();
      const elsewhere = await s.call('GET', `/v2/projects/${other.ids.project_id}`, undefined, member.key);
      assert.equal(elsewhere.status, 404, 'a share on one project says nothing about another');
      const del = await s.call('DELETE', `/v2/projects/${other.ids.project_id}`, undefined, member.key);
      assert.equal(del.status, 404);
      for (const role of ROLES.filter((r) => r !== 'owner')) {
        const r = await s.call('DELETE', `/v2/projects/${pid}`, undefined, w[role].key);
        assert.equal(r.status, 403, `a ${role} cannot delete the project`);
      }
      assert.equal((await s.call('GET', `/v2/projects/${pid}`, undefined, w.owner.key)).status, 200);
    });
  });
}

after(() => {
  if (summary.length) process.stdout.write(`${summary.join('\n')}\n`);
});
