/**
 * Crash safety of dashboard and integration writes, on each store: writers create and change trends
 * dashboards (with widgets and sections), gateway integrations (with their sealed tokens and
 * shares) and Signals configurations against a real server; the server is SIGKILLed at a random
 * moment, restarted on the same store, and every acknowledged write must be there and intact, and
 * nothing half written: each object is exactly its last acknowledged state or the state of the one
 * write that was in flight when the process died. Ingest crash safety is covered by the ingestion
 * tests.
 *
 * SPANBASE_CRASH_CYCLES (default 3) sets the kill-and-restart cycles per store.
 */
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import path from 'node:path';
import { describe, test } from 'node:test';
import SQLite from 'better-sqlite3';
import pg from 'pg';
import { type ChildServer, startChildServer } from '../helpers/child-server.ts';
import { operations } from '../helpers/openapi.ts';
import { storesUnderTest } from '../helpers/server.ts';

const CYCLES = Number(process.env.SPANBASE_CRASH_CYCLES ?? 3);
const WRITERS = 3;

type Core = Record<string, unknown>;

/** One object's possible states: the last acknowledged one, and those sent but not acknowledged. */
interface Tracked {
  kind: string;
  label: string;
  acked: Core | null;
  /** States whose request got no answer (the process died): each may or may not have landed. */
  pending: Core[];
  /** Acknowledged as deleted. */
  deleted: boolean;
  pendingDelete: boolean;
}

const dashCore = (d: any): Core => ({
  name: d.name,
  description: d.description ?? null,
  interval_mins: d.interval_mins,
  layout_map: d.layout_map ?? {},
  filter_tree: d.filter_tree ?? null,
  group_by: d.group_by ?? null,
  relative_time: d.relative_time ?? null,
});
const widgetCore = (w: any): Core => ({
  name: w.name,
  description: w.description ?? null,
  type: w.type,
  dataset: w.dataset ?? null,
  metric: w.metric,
  aggregation: w.aggregation,
  section_id: w.section_id ?? null,
});
const sectionCore = (s: any): Core => ({
  name: s.name,
  description: s.description ?? null,
  color: s.color ?? null,
});
const signalsCore = (s: any): Core => ({
  run_mode: s.run_mode,
  model: s.model ?? null,
  scheduled_runs_enabled: s.scheduled_runs_enabled,
  user_preferences: s.user_preferences,
  notification_severities: s.notification_severities,
});

function same(a: unknown, b: unknown): boolean {
  try {
    assert.deepStrictEqual(a, b);
    return true;
  } catch {
    return false;
  }
}

const rand = () => crypto.randomBytes(6).toString('hex');

for (const store of storesUnderTest()) {
  describe(`crash safety of dashboard and integration writes [${store}]`, () => {
    test('SIGKILL during writes: every acknowledged write is present and intact, nothing half written', async (t) => {
      const c: ChildServer = await startChildServer(store);
      const figures = { acked: 0, inflight: 0, checked: 0, lost: 0, torn: 0, kills: 0 };
      const byKind = new Map<string, number>();
      const ackedKind = (k: string) => {
        figures.acked++;
        byKind.set(k, (byKind.get(k) ?? 0) + 1);
      };
      try {
        const ops = operations((await c.call('GET', '/openapi.json', undefined, null)).body);
        const has = (k: string) => ops.some((o) => o.key === k);
        const TRENDS = '/v2/projects/{project_id}/log_streams/{log_stream_id}/trends';
        const dashboards = has(`POST ${TRENDS}`) && has(`GET ${TRENDS}/{dashboard_id}`);
        const widgets = has(`POST ${TRENDS}/{dashboard_id}/widgets`);
        const sections = has(`POST ${TRENDS}/{dashboard_id}/sections`);
        const integrations =
          has('PUT /v2/integrations/example_gateway') && has('GET /v2/integrations/{integration_id}');
        const shares = has('POST /v2/integrations/{integration_id}/users');
        const signals = has('PUT /v2/projects/{project_id}/runs/{run_id}/signals/configuration');
        if (!dashboards && !integrations && !signals) {
          t.skip('no dashboard, integration or Signals routes are served yet');
          return;
        }

        // --- fixtures: a project, a log stream and a user with a key per writer ------------------
        const ok = async (method: string, url: string, body?: unknown, auth?: any) => {
          const r = await c.call(method, url, body, auth);
          assert.ok(r.status < 300, `${method} ${url}: ${r.status} ${r.text}`);
          return r.body;
        };
        const project = await ok('POST', '/v2/projects', { name: `crash-${rand()}` });
        const writers: { key: string; userId: string; ls: string; base: string }[] = [];
        for (let w = 0; w < WRITERS; w++) {
          const email = `crash-${w}-${rand()}@example.com`;
          const password = `pw-${rand()}-long`;
          const u = await ok('POST', '/v2/users', { email, password });
          await ok('POST', `/v2/projects/${project.id}/collaborators`, { user_id: u.id, role: 'editor' });
          const login = await ok(
            'POST',
            '/login',
            new URLSearchParams({ username: email, password }).toString(),
            {
              'content-type': 'application/x-www-form-urlencoded',
            },
          );
          const key = (
            await ok(
              'POST',
              '/v2/users/api_keys',
              { description: 'crash' },
              { authorization: `Bearer ${login.access_token}` },
            )
          ).api_key;
          const ls = await ok('POST', `/v2/projects/${project.id}/log_streams`, { name: `ls-${w}` });
          writers.push({
            key,
            userId: u.id,
            ls: ls.id,
            base: `/v2/projects/${project.id}/log_streams/${ls.id}/trends`,
          });
        }

        // --- the model of what was acknowledged -------------------------------------------------
        const tracked = new Map<string, Tracked>();
        /** Creates whose answer never came: the object may exist under an id we never saw. */
        const pendingCreates: { kind: string; scope: string; core: Core }[] = [];
        const pendingCreate = (p: { kind: string; scope: string; core: Core }) => {
          pendingCreates.push(p);
          return { done: () => pendingCreates.splice(pendingCreates.indexOf(p), 1) };
        };
        const track = (id: string, kind: string, label: string): Tracked => {
          if (!tracked.has(id))
            tracked.set(id, { kind, label, acked: null, pending: [], deleted: false, pendingDelete: false });
          return tracked.get(id)!;
        };
        const faults: string[] = [];
        const tokens = new Map<string, { acked: Core | null; pending: Core[] }>();
        const shareRoles = new Map<string, { acked: string | null; pending: string[] }>();

        type Outcome = { status: number; body: any } | 'lost';
        const send = async (method: string, url: string, body: unknown, key: string): Promise<Outcome> => {
          try {
            const r = await c.call(method, url, body, key);
            if (r.status >= 300)
              faults.push(`${method} ${url} answered ${r.status}: ${r.text.slice(0, 200)}`);
            return { status: r.status, body: r.body };
          } catch {
            return 'lost';
          }
        };

        const filterTree = (n: number) => ({
          and: [
            {
              filter: {
                type: 'text',
                column_id: 'input',
                operator: 'contains',
                value: `w${n}`,
                case_sensitive: true,
              },
            },
            {
              not: { filter: { type: 'number', column_id: 'metrics/duration_ns', operator: 'gt', value: n } },
            },
          ],
        });
        const dashBody = (w: number, n: number) => ({
          name: `dash-${w}-${n}`,
          description: `description ${n} ✓`,
          interval_mins: 5 + n,
          layout_map: { [`row-${n}`]: [n, n + 1] },
          filter_tree: filterTree(n),
          group_by: n % 2 ? 'model' : null,
          relative_time: `last_${1 + (n % 30)}_days`,
        });
        const widgetBody = (n: number, sectionId: string | null) => ({
          name: `widget-${n}`,
          description: n % 2 ? `about ${n}` : null,
          type: ['bar_chart', 'line_chart', 'number', 'table'][n % 4],
          dataset: n % 3 ? [{ series: [`s${n}`] }] : null,
          metric: n % 2 ? 'metrics/duration_ns' : 'num_total_tokens',
          aggregation: ['Count', 'Sum', 'Average', 'P90'][n % 4],
          section_id: sectionId,
        });

        // --- one writer: sequential writes on its own objects until the server dies ---------------
        let n = 0;
        const writer = async (w: number, alive: { v: boolean }) => {
          const me = writers[w];
          const myDash: string[] = [...tracked.entries()]
            .filter(([, x]) => x.kind === 'dashboard' && x.label.startsWith(`w${w}:`) && !x.deleted)
            .map(([id]) => id);
          const myWidgets = () =>
            [...tracked.entries()]
              .filter(([, x]) => x.kind === 'widget' && x.label.startsWith(`w${w}:`) && !x.deleted)
              .map(([id, x]) => ({ id, dash: x.label.split(':')[1] }));
          const mySections = () =>
            [...tracked.entries()]
              .filter(([, x]) => x.kind === 'section' && x.label.startsWith(`w${w}:`) && !x.deleted)
              .map(([id, x]) => ({ id, dash: x.label.split(':')[1] }));
          while (alive.v) {
            const i = n++;
            const choice = i % 9;
            if (dashboards && (choice === 0 || myDash.length === 0)) {
              const body = dashBody(w, i);
              const pc = pendingCreate({ kind: 'dashboard', scope: me.base, core: dashCore(body) });
              const r = await send('POST', me.base, body, me.key);
              if (r === 'lost') return;
              pc.done();
              if (r.status >= 300) continue;
              const x = track(r.body.id, 'dashboard', `w${w}:${r.body.id}`);
              x.acked = dashCore(r.body);
              myDash.push(r.body.id);
              ackedKind('dashboard create');
            } else if (dashboards && choice === 1) {
              const id = myDash[i % myDash.length];
              const body = dashBody(w, i);
              const x = tracked.get(id)!;
              x.pending.push(dashCore(body));
              const r = await send('PUT', `${me.base}?trends_dashboard_id=${id}`, body, me.key);
              if (r === 'lost') return;
              if (r.status >= 300) continue;
              x.acked = dashCore(r.body);
              x.pending = [];
              ackedKind('dashboard update');
            } else if (dashboards && widgets && (choice === 2 || choice === 3)) {
              const id = myDash[i % myDash.length];
              const secs = mySections().filter((s) => s.dash === id);
              const body = widgetBody(i, choice === 3 && secs.length ? secs[0].id : null);
              const pc = pendingCreate({ kind: 'widget', scope: id, core: widgetCore(body) });
              const r = await send('POST', `${me.base}/${id}/widgets`, body, me.key);
              if (r === 'lost') return;
              pc.done();
              if (r.status >= 300) continue;
              // The answer is the widget, or the dashboard holding it: find the widget either way.
              const created = r.body.metric !== undefined ? r.body : findWidget(r.body, body.name);
              if (!created) {
                faults.push(
                  `widget create: cannot find the new widget in the answer ${JSON.stringify(r.body).slice(0, 200)}`,
                );
                continue;
              }
              const x = track(created.id, 'widget', `w${w}:${id}`);
              x.acked = widgetCore(created);
              ackedKind('widget create');
            } else if (dashboards && widgets && choice === 4 && myWidgets().length) {
              const wd = myWidgets()[i % myWidgets().length];
              const x = tracked.get(wd.id)!;
              const body = widgetBody(i, (x.acked?.section_id as string | null) ?? null);
              x.pending.push(widgetCore(body));
              const r = await send('PUT', `${me.base}/${wd.dash}/widgets/${wd.id}`, body, me.key);
              if (r === 'lost') return;
              if (r.status >= 300) continue;
              x.acked = widgetCore(body);
              x.pending = [];
              ackedKind('widget update');
            } else if (dashboards && widgets && choice === 5 && myWidgets().length > 2) {
              const wd = myWidgets()[0];
              const x = tracked.get(wd.id)!;
              x.pendingDelete = true;
              const r = await send('DELETE', `${me.base}/${wd.dash}/widgets/${wd.id}`, undefined, me.key);
              if (r === 'lost') return;
              if (r.status >= 300) continue;
              x.deleted = true;
              x.pendingDelete = false;
              ackedKind('widget delete');
            } else if (dashboards && sections && choice === 6) {
              const id = myDash[i % myDash.length];
              const body = { name: `section-${i}`, description: null, color: i % 2 ? '#ff0000' : null };
              const pc = pendingCreate({ kind: 'section', scope: id, core: sectionCore(body) });
              const r = await send('POST', `${me.base}/${id}/sections`, body, me.key);
              if (r === 'lost') return;
              pc.done();
              if (r.status >= 300) continue;
              const created =
                r.body.color !== undefined && r.body.widgets ? r.body : findSection(r.body, body.name);
              if (!created) continue;
              const x = track(created.id, 'section', `w${w}:${id}`);
              x.acked = sectionCore(created);
              ackedKind('section create');
            } else if (integrations && choice === 7) {
              const token = `tok-${w}-${i}-${rand()}`;
              const body = {
                endpoint: `https://gw-${w}-${i}.example.com/v1`,
                use_case: `use-${i}`,
                token,
                multi_modal_config: { max_files: 1 + i, max_file_size_bytes: 1000 + i },
              };
              const core = { endpoint: body.endpoint, use_case: body.use_case, token };
              const slot = tokens.get(me.userId) ?? { acked: null, pending: [] };
              tokens.set(me.userId, slot);
              slot.pending.push(core);
              const r = await send('PUT', '/v2/integrations/example_gateway', body, me.key);
              if (r === 'lost') return;
              if (r.status >= 300) continue;
              slot.acked = core;
              slot.pending = [];
              const x = track(r.body.id, 'integration', `w${w}:${me.userId}`);
              x.acked = { id: r.body.id };
              ackedKind('integration put');
              if (shares) {
                const other = writers[(w + 1) % WRITERS].userId;
                const role = ['viewer', 'annotator', 'editor'][i % 3];
                const sk = `${r.body.id}:${other}`;
                const sr = shareRoles.get(sk) ?? { acked: null, pending: [] };
                shareRoles.set(sk, sr);
                sr.pending.push(role);
                const s2 = await send(
                  'POST',
                  `/v2/integrations/${r.body.id}/users`,
                  [{ user_id: other, role }],
                  me.key,
                );
                if (s2 === 'lost') return;
                if (s2.status >= 300) continue;
                sr.acked = role;
                sr.pending = [];
                ackedKind('integration share');
              }
            } else if (signals && (choice === 8 || !dashboards)) {
              const body = {
                run_mode: 'ON_DEMAND',
                model: `model-${i}`,
                scheduled_runs_enabled: false,
                user_preferences: { focus_on: `focus ${i}`, dont_focus_on: '' },
                notification_severities: i % 2 ? ['LOW', 'HIGH'] : ['CRITICAL'],
              };
              const x = track(`signals:${me.ls}`, 'signals', `w${w}:${me.ls}`);
              // A PUT creates the configuration again, even after a first one that never landed
              // (which the last check took as gone).
              x.deleted = false;
              x.pending.push(signalsCore(body));
              const r = await send(
                'PUT',
                `/v2/projects/${project.id}/runs/${me.ls}/signals/configuration`,
                body,
                me.key,
              );
              if (r === 'lost') return;
              if (r.status >= 300) continue;
              x.acked = signalsCore(r.body.data ?? r.body);
              x.pending = [];
              ackedKind('signals put');
            }
          }
        };

        // --- verification after a restart ----------------------------------------------------------
        const verify = async () => {
          const problems: string[] = [];
          const judge = (what: string, x: Tracked, observed: Core | null) => {
            figures.checked++;
            if (observed === null) {
              if (x.deleted || x.pendingDelete || (x.acked === null && x.pending.length)) {
                // An in-flight delete that landed before the kill: later writes must not target it.
                x.deleted = true;
                x.pendingDelete = false;
                return;
              }
              figures.lost++;
              problems.push(`${what}: acknowledged, missing after the restart`);
              return;
            }
            if (x.deleted) {
              problems.push(`${what}: deleted (acknowledged) but back after the restart`);
              return;
            }
            const fits = [x.acked, ...x.pending].some((s) => s !== null && same(observed, s));
            if (!fits) {
              figures.torn++;
              problems.push(
                `${what}: ${JSON.stringify(observed)} is neither the acknowledged ${JSON.stringify(x.acked)} nor an in-flight state`,
              );
            }
            x.acked = observed;
            x.pending = [];
            x.pendingDelete = false;
          };
          for (const [w, me] of writers.entries()) {
            if (!dashboards) break;
            const all = await c.call('GET', me.base, undefined, me.key);
            const listed = new Map<string, any>(
              all.status === 200 && Array.isArray(all.body) ? all.body.map((d: any) => [d.id, d]) : [],
            );
            for (const [id, x] of tracked) {
              if (x.kind !== 'dashboard' || !x.label.startsWith(`w${w}:`)) continue;
              const r = await c.call('GET', `${me.base}/${id}`, undefined, me.key);
              judge(`dashboard ${id}`, x, r.status === 200 ? dashCore(r.body) : null);
              if (r.status !== 200) continue;
              const inside = [...r.body.widgets, ...r.body.sections.flatMap((s: any) => s.widgets)];
              const seen = new Set<string>();
              for (const wd of inside) {
                seen.add(wd.id);
                const tw = tracked.get(wd.id);
                if (tw) judge(`widget ${wd.id}`, tw, widgetCore(wd));
                else if (
                  !pendingCreates.some(
                    (p) => p.kind === 'widget' && p.scope === id && same(p.core, widgetCore(wd)),
                  )
                )
                  problems.push(`widget ${wd.id} on ${id}: never written by anyone`);
                // A create in flight at the kill that landed: known from now on (the next cycle's
                // check no longer has its pending create).
                else track(wd.id, 'widget', `w${w}:${id}`).acked = widgetCore(wd);
              }
              for (const [wid, tw] of tracked)
                if (tw.kind === 'widget' && tw.label === `w${w}:${id}` && !seen.has(wid))
                  judge(`widget ${wid}`, tw, null);
              for (const sec of r.body.sections) {
                const ts = tracked.get(sec.id);
                if (ts) judge(`section ${sec.id}`, ts, sectionCore(sec));
              }
              listed.delete(id);
            }
            // Dashboards nobody was told about may only be creates that were in flight.
            for (const d of listed.values()) {
              if (d.is_default) continue;
              if (
                !pendingCreates.some(
                  (p) => p.kind === 'dashboard' && p.scope === me.base && same(p.core, dashCore(d)),
                )
              )
                problems.push(`dashboard ${d.id} (${d.name}): not written by anyone, or half written`);
              else track(d.id, 'dashboard', `w${w}:${d.id}`).acked = dashCore(d);
            }
          }
          for (const [id, x] of tracked) {
            if (x.kind === 'integration') {
              const owner = writers.find((w) => x.label.endsWith(`:${w.userId}`))!;
              const r = await c.call('GET', `/v2/integrations/${id}`, undefined, owner.key);
              figures.checked++;
              if (r.status !== 200) {
                figures.lost++;
                problems.push(`integration ${id}: acknowledged, answers ${r.status} after the restart`);
              }
            } else if (x.kind === 'signals') {
              const ls = x.label.split(':')[1];
              const owner = writers.find((w) => w.ls === ls)!;
              const r = await c.call(
                'GET',
                `/v2/projects/${project.id}/runs/${ls}/signals/configuration`,
                undefined,
                owner.key,
              );
              judge(
                `signals of ${ls}`,
                x,
                r.status === 200 && r.body.data?.id ? signalsCore(r.body.data) : null,
              );
            }
          }
          for (const [sk, sr] of shareRoles) {
            const [iid, uid] = sk.split(':');
            const owner = writers.find((w) => tracked.get(iid)?.label.endsWith(`:${w.userId}`));
            if (!owner) continue;
            const r = await c.call('GET', `/v2/integrations/${iid}/users`, undefined, owner.key);
            const role = Array.isArray(r.body) ? r.body.find((u: any) => u.user_id === uid)?.role : undefined;
            figures.checked++;
            if (role === undefined) {
              if (sr.acked !== null) {
                figures.lost++;
                problems.push(`share of ${iid} with ${uid}: acknowledged as ${sr.acked}, missing`);
              }
            } else if (role !== sr.acked && !sr.pending.includes(role)) {
              figures.torn++;
              problems.push(`share of ${iid} with ${uid}: ${role}, acknowledged ${sr.acked}`);
            } else {
              sr.acked = role;
              sr.pending = [];
            }
          }
          problems.push(...(await verifySealedTokens()));
          pendingCreates.length = 0;
          return problems;
        };

        /** Stored integrations: settings are whole JSON and each token opens to an acknowledged (or in-flight) one. */
        const verifySealedTokens = async (): Promise<string[]> => {
          const problems: string[] = [];
          if (!integrations || tokens.size === 0) return problems;
          let mod: any;
          try {
            mod = {
              ...(await import('../../src/services/integrations.ts')),
              ...(await import('../../src/services/keyring.ts')),
              ...(await import('../../src/config.ts')),
            };
          } catch (err) {
            t.diagnostic(`sealed-token check skipped: ${(err as Error).message}`);
            return problems;
          }
          if (!mod.integrationsBox || !mod.tokenAad || !mod.Keyring) {
            t.diagnostic('sealed-token check skipped: integrations module has no integrationsBox/tokenAad');
            return problems;
          }
          const env = { SPANBASE_DATA_DIR: c.dataDir, SPANBASE_SECRET_KEY: c.env.SPANBASE_SECRET_KEY };
          const box = mod.integrationsBox(mod.Keyring.load(mod.loadConfig(env)));
          let rows: any[];
          if (store === 'sqlite') {
            const db = new SQLite(path.join(c.dataDir, 'spanbase.db'), {
              readonly: true,
              fileMustExist: true,
            });
            try {
              rows = db
                .prepare('select id, holder_id, created_by, config, token_ciphertext from integrations')
                .all();
            } finally {
              db.close();
            }
          } else {
            const client = new pg.Client({
              connectionString: c.env.SPANBASE_DATABASE_URL,
              options: `-c search_path=${c.schema}`,
            });
            await client.connect();
            try {
              rows = (
                await client.query(
                  'select id, holder_id, created_by, config, token_ciphertext from integrations',
                )
              ).rows;
            } finally {
              await client.end();
            }
          }
          for (const row of rows) {
            const owner = row.holder_id ?? row.created_by;
            const slot = tokens.get(owner);
            if (!slot) continue;
            figures.checked++;
            let observed: Core;
            try {
              const cfg = typeof row.config === 'string' ? JSON.parse(row.config) : row.config;
              observed = {
                endpoint: cfg.endpoint,
                use_case: cfg.use_case,
                token: box.open(row.token_ciphertext, mod.tokenAad(row.id)),
              };
            } catch (err) {
              figures.torn++;
              problems.push(
                `integration ${row.id}: stored settings or token do not open (${(err as Error).message})`,
              );
              continue;
            }
            if (![slot.acked, ...slot.pending].some((s) => s !== null && same(observed, s))) {
              figures.torn++;
              problems.push(
                `integration ${row.id}: stored ${observed.endpoint} is neither the acknowledged ${slot.acked?.endpoint} nor in flight`,
              );
            } else {
              slot.acked = observed;
              slot.pending = [];
            }
          }
          return problems;
        };

        // --- the cycles --------------------------------------------------------------------------------
        for (let cycle = 0; cycle < CYCLES; cycle++) {
          const alive = { v: true };
          const running = Promise.all(writers.map((_, w) => writer(w, alive)));
          await new Promise((r) => setTimeout(r, 300 + Math.floor(Math.random() * 1200)));
          await c.kill('SIGKILL');
          figures.kills++;
          alive.v = false;
          await running;
          figures.inflight += [...tracked.values()].filter((x) => x.pending.length || x.pendingDelete).length;
          figures.inflight += pendingCreates.length;
          await c.restart();
          const problems = await verify();
          assert.deepEqual(problems, [], `after kill ${cycle + 1}:\n  ${problems.join('\n  ')}`);
        }
        assert.deepEqual(faults, [], 'writes answered other than 2xx');
        assert.ok(figures.acked > 0, 'some writes were acknowledged');
        process.stdout.write(
          `crash-writes[${store}]: ${figures.kills} kills, ${figures.acked} acknowledged writes, ${figures.inflight} in flight at a kill, ${figures.checked} checks, ${figures.lost} lost, ${figures.torn} half written (${[...byKind].map(([k, v]) => `${k} ${v}`).join(', ')})\n`,
        );
      } finally {
        await c.close();
      }
    });
  });
}

function findWidget(dashboard: any, name: string): any {
  const all = [
    ...(dashboard?.widgets ?? []),
    ...(dashboard?.sections ?? []).flatMap((s: any) => s.widgets ?? []),
  ];
  return all.filter((w: any) => w.name === name).pop();
}

function findSection(dashboard: any, name: string): any {
  return (dashboard?.sections ?? []).filter((s: any) => s.name === name).pop();
}
