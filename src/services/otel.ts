/**
 * OTLP/HTTP trace ingestion: resolves the target project and run from the request headers, maps the
 * decoded spans (domain/otel-mapping.ts) and writes them through the ingest service, the one write
 * path of records (so derived data, sessions and token usage stay current exactly as for the JSON
 * routes). Spans the ingest service refuses are counted for the OTLP `partialSuccess`.
 */
import { HttpError, ValidationError, notFound } from '../domain/errors.ts';
import { isUuid } from '../domain/ids.ts';
import type { OtelSpan } from '../domain/otel-decode.ts';
import {
  type MappedSpan,
  type SpanNode,
  type TraceGroup,
  groupTraces,
  mapSpan,
  nestedRecord,
  traceRecord,
} from '../domain/otel-mapping.ts';
import type { RunRow } from '../store/runs.ts';
import type { Caller } from './auth.ts';
import type { IngestService } from './ingest.ts';
import type { ProjectsService } from './projects.ts';
import type { RunsService } from './runs.ts';

type Headers = Record<string, string | string[] | undefined>;
type Obj = Record<string, unknown>;

export interface OtelTarget {
  projectId: string;
  run: { id: string; kind: 'log_stream' | 'experiment' };
  /** The `sessionid` header. */
  session: string | null;
}

export interface ExportResult {
  accepted: number;
  rejected: number;
  errorMessage: string;
}

function header(h: Headers, name: string): string | undefined {
  const v = h[name];
  const one = Array.isArray(v) ? v[0] : v;
  return one === undefined || one.trim() === '' ? undefined : one.trim();
}

function uuidHeader(h: Headers, name: string): string | undefined {
  const v = header(h, name);
  if (v !== undefined && !isUuid(v)) {
    throw new ValidationError({
      loc: ['header', name],
      msg: 'Input should be a valid UUID',
      type: 'uuid_parsing',
      input: v,
    });
  }
  return v?.toLowerCase();
}

/** Number of spans in a node and its descendants. */
function size(n: SpanNode): number {
  let total = 1;
  for (const c of n.children) total += size(c);
  return total;
}

function reason(err: unknown): string {
  if (err instanceof ValidationError) {
    const i = err.items[0];
    return i ? `${i.msg} (at ${i.loc.join('.')})` : err.message;
  }
  return (err as Error).message;
}

/** A refusal of one write that only concerns the records sent (not the whole request). */
function isRefusal(err: unknown): boolean {
  return err instanceof ValidationError || (err instanceof HttpError && err.statusCode === 404);
}

export class OtelService {
  constructor(
    private readonly projects: ProjectsService,
    private readonly runs: RunsService,
    private readonly ingest: IngestService,
  ) {}

  /**
   * The target of an export: project by `projectid` or `project` (name); run by `logstreamid`,
   * `logstream` (name, created when missing), `experimentid` or `experiment` (name). The caller
   * needs the editor role on the project.
   */
  async target(caller: Caller, h: Headers): Promise<OtelTarget> {
    const projectId = uuidHeader(h, 'projectid');
    const projectName = header(h, 'project');
    const logStreamId = uuidHeader(h, 'logstreamid');
    const logStreamName = header(h, 'logstream');
    const experimentId = uuidHeader(h, 'experimentid');
    const experimentName = header(h, 'experiment');
    if (projectId === undefined && projectName === undefined) {
      throw new ValidationError({
        loc: ['header', 'projectid'],
        msg: 'Give the project as a projectid (uuid) or project (name) header',
        type: 'missing',
      });
    }
    if (!logStreamId && !logStreamName && !experimentId && !experimentName) {
      throw new ValidationError({
        loc: ['header', 'logstream'],
        msg: 'Give the target as a logstreamid, logstream, experimentid or experiment header',
        type: 'missing',
      });
    }
    let pid = projectId;
    if (pid === undefined) {
      const found = (await this.projects.list(caller, { name: projectName })).find(
        (p) => p.name === projectName,
      );
      if (!found)
        throw new HttpError(
          404,
          `No project is named ${JSON.stringify(projectName)} (that you can see). Create it first ` +
            `(POST /v2/projects {"name": ${JSON.stringify(projectName)}}, \`spanbase\` CLI or the console), ` +
            'or name an existing project in the project header, or give its id in the projectid header.',
        );
      pid = found.id;
    }
    await this.projects.access(caller, pid, 'editor');
    let run: RunRow | { id: string; kind: 'log_stream' | 'experiment' };
    if (logStreamId) run = await this.runs.resolve(caller, pid, logStreamId, 'log_stream');
    else if (experimentId) run = await this.runs.resolve(caller, pid, experimentId, 'experiment');
    else if (logStreamName) run = await this.logStreamByName(caller, pid, logStreamName);
    else {
      const found = (await this.runs.list(caller, pid, 'experiment')).find((r) => r.name === experimentName);
      if (!found) throw notFound('Experiment');
      run = { id: found.id, kind: 'experiment' };
    }
    return {
      projectId: pid,
      run: { id: run.id, kind: run.kind === 'experiment' ? 'experiment' : 'log_stream' },
      session: header(h, 'sessionid') ?? null,
    };
  }

  /** A log stream by name, created when the project has none of that name. */
  private async logStreamByName(caller: Caller, projectId: string, name: string) {
    const find = async () =>
      (await this.runs.list(caller, projectId, 'log_stream')).find((r) => r.name === name);
    const found = await find();
    if (found) return { id: found.id, kind: 'log_stream' as const };
    try {
      const made = await this.runs.create(caller, projectId, 'log_stream', name);
      return { id: made.id, kind: 'log_stream' as const };
    } catch (err) {
      // Another export created it at the same moment.
      const again = err instanceof HttpError && err.statusCode === 409 ? await find() : undefined;
      if (again) return { id: again.id, kind: 'log_stream' as const };
      throw err;
    }
  }

  /** Maps and writes the spans of one export. */
  async export(caller: Caller, target: OtelTarget, spans: OtelSpan[]): Promise<ExportResult> {
    const result: ExportResult = { accepted: 0, rejected: 0, errorMessage: '' };
    const refuse = (n: number, why: string) => {
      result.rejected += n;
      if (!result.errorMessage) result.errorMessage = why;
    };
    const mapped: MappedSpan[] = [];
    for (const s of spans) {
      const m = mapSpan(s);
      if (m.ok) mapped.push(m.span);
      else refuse(1, `span ${s.spanId || '(none)'} of trace ${s.traceId || '(none)'}: ${m.reason}`);
    }
    const groups = groupTraces(mapped);
    const written = new Set<string>();

    // 1. Traces with the spans that hang below their root, one ingest request per session. Traces
    // that name no session share a request, each getting a session of its own (an exporter batches
    // unrelated traces).
    const bySession = new Map<string, { session: string; list: TraceGroup[] }>();
    for (const g of groups) {
      const session = g.session ?? target.session ?? '';
      const entry = bySession.get(session);
      if (entry) entry.list.push(g);
      else bySession.set(session, { session, list: [g] });
    }
    for (const { session, list } of bySession.values()) {
      const ok = await this.writeTraces(caller, target, session, list, refuse);
      for (const g of ok) {
        written.add(g.traceId);
        for (const n of g.top) result.accepted += size(n);
      }
    }

    // 2. Spans whose parent was not in this export.
    for (const g of groups) {
      if (!g.orphans.length) continue;
      if (!written.has(g.traceId)) {
        refuse(
          g.orphans.reduce((t, n) => t + size(n), 0),
          `trace ${g.traceId} could not be written`,
        );
        continue;
      }
      result.accepted += await this.writeOrphans(caller, target, g, refuse);
    }
    return result;
  }

  private body(target: OtelTarget, extra: Obj): Obj {
    return {
      [target.run.kind === 'experiment' ? 'experiment_id' : 'log_stream_id']: target.run.id,
      is_complete: true,
      ...extra,
    };
  }

  /**
   * Writes traces of one session in one request; when it is refused, trace by trace so one bad trace
   * does not sink the others. Returns the groups written.
   */
  private async writeTraces(
    caller: Caller,
    target: OtelTarget,
    session: string,
    list: TraceGroup[],
    refuse: (n: number, why: string) => void,
  ): Promise<TraceGroup[]> {
    const attempt = async (gs: TraceGroup[]) => {
      const traces = gs.map((g) => ({ ...traceRecord(g), spans: g.top.map(nestedRecord) }));
      await this.writeWithSession(caller, target, session, traces);
    };
    try {
      await attempt(list);
      return list;
    } catch (err) {
      if (!isRefusal(err)) throw err;
      if (list.length === 1) {
        const g = list[0];
        refuse(
          g.top.reduce((t, n) => t + size(n), 0),
          `trace ${g.traceId}: ${reason(err)}`,
        );
        return [];
      }
    }
    const ok: TraceGroup[] = [];
    for (const g of list) {
      try {
        await attempt([g]);
        ok.push(g);
      } catch (err) {
        if (!isRefusal(err)) throw err;
        refuse(
          g.top.reduce((t, n) => t + size(n), 0),
          `trace ${g.traceId}: ${reason(err)}`,
        );
      }
    }
    return ok;
  }

  /**
   * Session of the traces: the `session.id` / `gen_ai.conversation.id` attribute or the `sessionid`
   * header, found or created by external id; a `sessionid` header that is the uuid of a session of the
   * run names that session.
   */
  private async writeWithSession(caller: Caller, target: OtelTarget, session: string, traces: Obj[]) {
    const { projectId } = target;
    if (session === '') {
      return this.ingest.traces(
        caller,
        projectId,
        this.body(target, { traces }),
        {},
        { sessionPerTrace: true },
      );
    }
    if (session === target.session && isUuid(session)) {
      try {
        return await this.ingest.traces(
          caller,
          projectId,
          this.body(target, { traces, session_id: session.toLowerCase() }),
        );
      } catch (err) {
        if (!(err instanceof HttpError && err.statusCode === 404 && /^Session/.test(err.message))) throw err;
      }
    }
    return this.ingest.traces(caller, projectId, this.body(target, { traces, session_external_id: session }));
  }

  /**
   * Spans whose parent is not in this export: written under that parent whether it is stored already
   * (an earlier export) or not (it ends later; ingestion counts its children when it lands). Returns
   * the number of spans written.
   */
  private async writeOrphans(
    caller: Caller,
    target: OtelTarget,
    g: TraceGroup,
    refuse: (n: number, why: string) => void,
  ): Promise<number> {
    const byParent = new Map<string, SpanNode[]>();
    for (const n of g.orphans) {
      const p = n.span.parentId as string;
      const list = byParent.get(p);
      if (list) list.push(n);
      else byParent.set(p, [n]);
    }
    let accepted = 0;
    for (const [parentId, nodes] of byParent) {
      const count = nodes.reduce((t, n) => t + size(n), 0);
      try {
        await this.ingest.spans(
          caller,
          target.projectId,
          this.body(target, { trace_id: g.traceId, parent_id: parentId, spans: nodes.map(nestedRecord) }),
        );
        accepted += count;
      } catch (err) {
        if (!isRefusal(err)) throw err;
        refuse(count, `spans under ${parentId}: ${reason(err)}`);
      }
    }
    return accepted;
  }
}
