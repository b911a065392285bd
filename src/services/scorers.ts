/**
 * Scorers (the hosted `/scorers` routes): LLM judges and rule scorers stored with immutable versions,
 * plus the presets of domain/scorer-presets.ts listed beside them. Scorers belong to the whole
 * server (as hosted: to the organisation): every user reads them and creates them; their creator
 * and admins change and delete them. Presets are read-only.
 */
import { HttpError, forbidden, notFound, valueError } from '../domain/errors.ts';
import { DERIVED_METRICS, PROMOTED_METRICS } from '../domain/records.ts';
import { PRESETS, type Preset, presetById, presetId } from '../domain/scorer-presets.ts';
import { type Rule, ruleOutputType, ruleProblem } from '../domain/scorer-rules.ts';
import type { ActiveScorer, LlmVersionConfig, OutputType, ScorerFilter } from '../domain/scorer-types.ts';
import { rejectUnstorable } from '../domain/text.ts';
import { nowUs, toIso } from '../domain/time.ts';
import type { ScorerRow, ScorersRepo, VersionRow } from '../store/scorers.ts';
import type { Caller } from './auth.ts';

type Obj = Record<string, any>;

/** Metric keys ingestion owns: a scorer of that name would overwrite them. */
const RESERVED = new Set<string>([...PROMOTED_METRICS, ...DERIVED_METRICS]);

export const CODE_SCORERS_REFUSED =
  "Python code scorers are not run by Spanbase (it does not run users' code); use a rule scorer (POST /v2/scorers/{id}/version/rule: regex, contains, equals ground truth, JSON valid, JSON schema, length, latency, cost)";

/** The default node types of an LLM judge (the official client's custom metric scores llm spans). */
const DEFAULT_NODE_TYPES = ['llm'];

export class ScorersService {
  /** Bumped on every change: the scoring cache (services/scoring.ts) reloads when it moves. */
  generation = 0;

  constructor(private readonly repo: ScorersRepo) {}

  private changed() {
    this.generation++;
  }

  // ---- shapes ----------------------------------------------------------------------------------

  private versionOut(v: VersionRow, s: ScorerRow | null): Obj {
    const c = v.config;
    const at = toIso(v.created_at);
    const base: Obj = {
      id: v.id,
      version: v.version,
      scorer_id: v.scorer_id,
      created_at: at,
      updated_at: at,
      scoreable_node_types: c.scoreable_node_types ?? s?.scoreable_node_types ?? null,
    };
    if (v.kind === 'rule') {
      const rule = c as unknown as Rule;
      return {
        ...base,
        output_type: ruleOutputType(rule),
        rule: { rule: rule.rule, field: rule.field, params: rule.params, negate: rule.negate },
      };
    }
    return {
      ...base,
      model_name: c.model_name ?? null,
      num_judges: c.num_judges ?? null,
      cot_enabled: c.cot_enabled ?? null,
      output_type: c.output_type ?? null,
      input_type: c.input_type ?? null,
      chain_poll_template: c.chain_poll_template ?? null,
      user_prompt: c.user_prompt ?? null,
      instructions: c.instructions ?? null,
      allowed_model: true,
    };
  }

  private presetVersion(p: Preset): Obj {
    return {
      id: presetId(`${p.name}:v1`),
      version: 1,
      scorer_id: p.id,
      created_at: toIso(0),
      updated_at: toIso(0),
      scoreable_node_types: p.nodeTypes,
      output_type: p.outputType,
      chain_poll_template: p.template ?? null,
      num_judges: p.kind === 'llm' ? 3 : null,
      cot_enabled: p.kind === 'llm' ? true : null,
      model_name: null,
    };
  }

  private presetOut(p: Preset): Obj {
    const v = this.presetVersion(p);
    return {
      id: p.id,
      name: p.name,
      scorer_type: 'preset',
      defaults: null,
      latest_version: v,
      default_version_id: v.id,
      default_version: v,
      scoreable_node_types: p.nodeTypes,
      output_type: p.outputType,
      input_type: null,
      label: p.name,
      tags: [p.kind === 'llm' ? 'llm-judge' : 'computed'],
      description: p.description,
      created_by: null,
      created_at: null,
      updated_at: null,
    };
  }

  private async scorerOut(s: ScorerRow): Promise<Obj> {
    const versions = await this.repo.versions(s.id);
    const latest = versions[versions.length - 1];
    const def = versions.find((v) => v.id === s.default_version_id);
    return {
      id: s.id,
      name: s.name,
      scorer_type: s.scorer_type,
      defaults: s.defaults,
      latest_version: latest ? this.versionOut(latest, s) : null,
      default_version_id: s.default_version_id,
      default_version: def ? this.versionOut(def, s) : null,
      scoreable_node_types: s.scoreable_node_types,
      output_type: def?.kind === 'rule' ? ruleOutputType(def.config as unknown as Rule) : s.output_type,
      input_type: s.input_type,
      label: s.name,
      tags: s.tags,
      description: s.description,
      created_by: s.created_by,
      created_at: toIso(s.created_at),
      updated_at: toIso(s.updated_at),
    };
  }

  // ---- reads -----------------------------------------------------------------------------------

  /** A stored scorer's row (404 when none): its defaults fill a draft version. */
  async row(id: string): Promise<ScorerRow> {
    return this.stored(id);
  }

  private async stored(id: string): Promise<ScorerRow> {
    const s = await this.repo.byId(id);
    if (!s) throw notFound('Scorer');
    return s;
  }

  async get(_caller: Caller, id: string) {
    const p = presetById(id);
    if (p) return this.presetOut(p);
    return this.scorerOut(await this.stored(id));
  }

  /** `POST /scorers/list`: presets and stored scorers, filtered, by name, a page at a time. */
  async list(_caller: Caller, body: { filters?: Obj[]; sort?: Obj | null }, start = 0, limit = 100) {
    const all: Obj[] = [...PRESETS.map((p) => this.presetOut(p))];
    for (const s of await this.repo.all()) all.push(await this.scorerOut(s));
    const matching = all.filter((s) => (body.filters ?? []).every((f) => listFilter(f, s)));
    const desc = body.sort?.ascending === false;
    matching.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0) * (desc ? -1 : 1));
    const page = matching.slice(start, start + limit);
    const next = start + limit < matching.length ? start + limit : null;
    return {
      scorers: page,
      starting_token: start,
      limit,
      paginated: next !== null,
      next_starting_token: next,
    };
  }

  async tags(_caller: Caller): Promise<string[]> {
    const tags = new Set<string>();
    for (const s of await this.repo.all()) for (const t of s.tags) tags.add(t);
    return [...tags].sort();
  }

  // ---- writes ----------------------------------------------------------------------------------

  private checkName(name: string) {
    if (RESERVED.has(name))
      throw valueError(['body', 'name'], `${name} is a metric Spanbase computes itself; choose another name`);
    if (name.includes('/')) throw valueError(['body', 'name'], 'A scorer name may not contain "/"');
    if (PRESETS.some((p) => p.name === name))
      throw new HttpError(409, `${name} is the name of a preset scorer`);
  }

  async create(caller: Caller, b: Obj) {
    rejectUnstorable(['body'], b);
    const name = String(b.name).trim();
    if (!name) throw valueError(['body', 'name'], 'The name may not be blank');
    this.checkName(name);
    if (b.scorer_type === 'preset' || b.scorer_type === 'luna')
      throw valueError(
        ['body', 'scorer_type'],
        `${b.scorer_type} scorers are built in; create llm, rule or code scorers`,
      );
    const taken = () => new HttpError(409, `A scorer named ${name} exists already`);
    if (await this.repo.byName(name)) throw taken();
    const now = nowUs();
    const id = await this.repo
      .create(
        {
          name,
          scorer_type: b.scorer_type,
          description: b.description ?? null,
          tags: b.tags ?? [],
          defaults: b.defaults ?? null,
          output_type: b.output_type ?? b.defaults?.output_type ?? null,
          input_type: b.input_type ?? b.defaults?.input_type ?? null,
          scoreable_node_types: b.scoreable_node_types ?? b.defaults?.scoreable_node_types ?? null,
          created_by: caller.id,
        },
        now,
      )
      // Two creates of one name at once: the unique index refuses the second, which is a 409 too.
      .catch(async (err) => {
        throw (await this.repo.byName(name)) ? taken() : err;
      });
    this.changed();
    return this.get(caller, id);
  }

  /** A stored scorer the caller may change (creator or admin); presets are read-only. */
  private async changeable(caller: Caller, id: string): Promise<ScorerRow> {
    if (presetById(id)) throw forbidden('Preset scorers cannot be changed');
    const s = await this.stored(id);
    if (caller.role !== 'admin' && s.created_by !== caller.id)
      throw forbidden('Only the creator of a scorer or an admin may change it');
    return s;
  }

  async update(caller: Caller, id: string, b: Obj) {
    rejectUnstorable(['body'], b);
    const s = await this.changeable(caller, id);
    const set: Partial<ScorerRow> = {};
    if (b.name !== undefined && b.name !== null && b.name !== s.name) {
      const name = String(b.name).trim();
      this.checkName(name);
      if (await this.repo.byName(name)) throw new HttpError(409, `A scorer named ${name} exists already`);
      set.name = name;
    }
    for (const k of [
      'description',
      'tags',
      'defaults',
      'scoreable_node_types',
      'output_type',
      'input_type',
    ] as const)
      if (b[k] !== undefined) (set as Obj)[k] = b[k];
    await this.repo.update(id, set, nowUs());
    this.changed();
    return this.get(caller, id);
  }

  async delete(caller: Caller, id: string) {
    await this.changeable(caller, id);
    await this.repo.delete(id);
    this.changed();
    return { message: 'Scorer deleted' };
  }

  async addLlmVersion(caller: Caller, id: string, b: Obj) {
    rejectUnstorable(['body'], b);
    const s = await this.changeable(caller, id);
    if (s.scorer_type !== 'llm')
      throw valueError(['path', 'id'], `This is a ${s.scorer_type} scorer, not an llm scorer`);
    if (!b.chain_poll_template && !b.user_prompt && !b.instructions)
      throw valueError(['body'], 'Give a chain_poll_template, a user_prompt or instructions');
    const config = llmConfigOf(b, s);
    const v = await this.repo.addVersion(id, 'llm', config as unknown as Obj, caller.id, nowUs());
    this.changed();
    return this.versionOut(v, s);
  }

  async addRuleVersion(caller: Caller, id: string, b: Obj) {
    rejectUnstorable(['body'], b);
    const s = await this.changeable(caller, id);
    if (s.scorer_type !== 'rule')
      throw valueError(['path', 'id'], `This is a ${s.scorer_type} scorer, not a rule scorer`);
    const rule: Rule = {
      rule: b.rule,
      field: b.field ?? 'output',
      params: b.params ?? {},
      negate: b.negate ?? false,
    };
    const problem = ruleProblem(rule);
    if (problem) throw valueError(['body'], problem);
    const config = { ...rule, scoreable_node_types: b.scoreable_node_types ?? null };
    const v = await this.repo.addVersion(id, 'rule', config, caller.id, nowUs());
    this.changed();
    return this.versionOut(v, s);
  }

  async version(_caller: Caller, id: string, number?: number) {
    const p = presetById(id);
    if (p) {
      if (number !== undefined && number !== 1) throw notFound('Scorer version');
      return this.presetVersion(p);
    }
    const s = await this.stored(id);
    const versions = await this.repo.versions(id);
    const v =
      number === undefined
        ? versions.find((x) => x.id === s.default_version_id)
        : versions.find((x) => x.version === number);
    if (!v) throw notFound('Scorer version');
    return this.versionOut(v, s);
  }

  async versions(_caller: Caller, id: string) {
    const p = presetById(id);
    if (p) return { versions: [this.presetVersion(p)] };
    const s = await this.stored(id);
    return { versions: (await this.repo.versions(id)).map((v) => this.versionOut(v, s)) };
  }

  async restore(caller: Caller, id: string, number: number) {
    const s = await this.changeable(caller, id);
    const v = (await this.repo.versions(id)).find((x) => x.version === number);
    if (!v) throw notFound('Scorer version');
    await this.repo.setDefault(id, v.id, nowUs());
    this.changed();
    return this.versionOut(v, s);
  }

  // ---- what scoring reads ----------------------------------------------------------------------

  /**
   * The scorer a run setting names, at its pinned version (by id or number) or the default one, with
   * the setting's overrides; a 422 (at `loc`) when it cannot score.
   */
  async resolve(config: Obj, loc: (string | number)[]): Promise<ActiveScorer> {
    const filters = (config.filters ?? []) as ScorerFilter[];
    const p = presetById(config.id);
    if (p) {
      return {
        id: p.id,
        name: p.name,
        versionId: presetId(`${p.name}:v1`),
        version: 1,
        kind: p.kind,
        code: p.code,
        llm:
          p.kind === 'llm'
            ? {
                model_name: config.model_name ?? null,
                num_judges: config.num_judges ?? 3,
                cot_enabled: config.cot_enabled ?? true,
                output_type: p.outputType,
                input_type: null,
                scoreable_node_types: null,
                instructions: null,
                user_prompt: null,
                chain_poll_template: p.template ?? null,
              }
            : undefined,
        nodeTypes: config.scoreable_node_types ?? p.nodeTypes,
        filters,
      };
    }
    const s = await this.repo.byId(config.id);
    if (!s) throw valueError([...loc, 'id'], 'No scorer has this id');
    if (s.scorer_type === 'code') throw valueError([...loc, 'id'], CODE_SCORERS_REFUSED);
    const versions = await this.repo.versions(s.id);
    const pin = config.scorer_version;
    const v = pin?.id
      ? versions.find((x) => x.id === pin.id)
      : pin?.version
        ? versions.find((x) => x.version === pin.version)
        : versions.find((x) => x.id === s.default_version_id);
    if (!v)
      throw valueError(
        [...loc, 'scorer_version'],
        `The scorer ${s.name} has no such version (create one first)`,
      );
    const c = v.config;
    const nodeTypes = config.scoreable_node_types ?? c.scoreable_node_types ?? s.scoreable_node_types;
    const base = {
      id: s.id,
      name: s.name,
      versionId: v.id,
      version: v.version,
      filters: filters.length ? filters : ((s.defaults?.filters ?? []) as ScorerFilter[]),
    };
    if (v.kind === 'rule') {
      const { scoreable_node_types: _, ...rule } = c;
      return {
        ...base,
        kind: 'rule',
        rule: rule as unknown as Rule,
        nodeTypes: nodeTypes ?? ['llm', 'trace'],
      };
    }
    const llm = c as unknown as LlmVersionConfig;
    return {
      ...base,
      kind: 'llm',
      llm: {
        ...llm,
        model_name: config.model_name ?? llm.model_name,
        num_judges: config.num_judges ?? llm.num_judges,
        cot_enabled: config.cot_enabled ?? llm.cot_enabled,
      },
      nodeTypes: nodeTypes ?? DEFAULT_NODE_TYPES,
    };
  }
}

/** An LLM version's config from a version body, the scorer's defaults filling what it leaves out. */
export function llmConfigOf(
  b: Obj,
  s: { defaults: Obj | null; output_type: string | null; input_type: string | null },
): LlmVersionConfig {
  const d = s.defaults ?? {};
  return {
    model_name: b.model_name ?? d.model_name ?? null,
    num_judges: b.num_judges ?? d.num_judges ?? 3,
    cot_enabled: b.cot_enabled ?? d.cot_enabled ?? true,
    output_type: (b.output_type ?? s.output_type ?? d.output_type ?? 'boolean') as OutputType,
    input_type: b.input_type ?? s.input_type ?? null,
    scoreable_node_types: b.scoreable_node_types ?? null,
    instructions: b.instructions ?? null,
    user_prompt: b.user_prompt ?? null,
    chain_poll_template: b.chain_poll_template ?? null,
  };
}

/** One hosted list filter on a scorer's shape. */
function listFilter(f: Obj, s: Obj): boolean {
  const op = f.operator ?? 'eq';
  const values: string[] = Array.isArray(f.value) ? f.value : [f.value];
  const cs = f.case_sensitive !== false;
  const norm = (x: string) => (cs ? x : x.toLowerCase());
  const have: string[] =
    f.name === 'name' || f.name === 'label'
      ? [s.name]
      : f.name === 'scorer_type'
        ? [s.scorer_type]
        : f.name === 'tags'
          ? s.tags
          : f.name === 'creator'
            ? [s.created_by ?? '']
            : [];
  if (f.name === 'created_at' || f.name === 'updated_at' || f.name === 'model_type')
    throw valueError(['body', 'filters'], `Filtering scorers by ${f.name} is not supported`);
  const hit = (v: string) =>
    op === 'contains' ? have.some((h) => norm(h).includes(norm(v))) : have.some((h) => norm(h) === norm(v));
  if (op === 'ne' || op === 'not_in') return !values.some(hit);
  return values.some(hit);
}
