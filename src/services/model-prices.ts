/**
 * Model prices of a project (they beat the shipped catalogue) and the pricer ingestion uses. Viewers
 * read prices; editors and owners change them. A change applies to records written after it: this
 * process drops its cached pricer of the project at once, other processes within ACCESS_CACHE_MS.
 */
import { type ErrorItem, ValidationError, notFound } from '../domain/errors.ts';
import { newId } from '../domain/ids.ts';
import { CATALOGUE, inputIncludesCached } from '../domain/prices/catalogue.ts';
import { Pricer, type ProjectPrice, compilePattern } from '../domain/prices/pricer.ts';
import { textFaults } from '../domain/text.ts';
import { nowUs, parseTimestamp, toIso } from '../domain/time.ts';
import type { ModelPriceRow, ModelPricesRepo } from '../store/model-prices.ts';
import type { Caller } from './auth.ts';
import { ACCESS_CACHE_MS } from './access-cache.ts';
import type { ProjectsService } from './projects.ts';
import type { RunsService } from './runs.ts';

export interface ModelPriceBody {
  model_pattern?: string;
  input_price_per_million?: number;
  output_price_per_million?: number;
  cache_read_input_price_per_million?: number | null;
  cache_creation_input_price_per_million?: number | null;
  input_includes_cached_tokens?: boolean | null;
  start_date?: string | null;
}

function toProjectPrice(r: ModelPriceRow): ProjectPrice {
  return {
    id: r.id,
    model_pattern: r.model_pattern,
    input_price_per_million: r.input_price_per_million,
    output_price_per_million: r.output_price_per_million,
    cache_read_input_price_per_million: r.cache_read_input_price_per_million,
    cache_creation_input_price_per_million: r.cache_creation_input_price_per_million,
    input_includes_cached_tokens:
      r.input_includes_cached_tokens === null ? null : Boolean(r.input_includes_cached_tokens),
    start_date: r.start_date,
    created_at: r.created_at,
  };
}

function describe(r: ModelPriceRow) {
  const p = toProjectPrice(r);
  return {
    ...p,
    project_id: r.project_id,
    start_date: p.start_date === null ? null : toIso(p.start_date),
    source: 'project' as const,
    created_by: r.created_by,
    created_at: toIso(r.created_at),
    updated_at: toIso(r.updated_at),
  };
}

/** The catalogue as the list route shows it (computed once). */
const CATALOGUE_VIEW = {
  checked: CATALOGUE.checked,
  sources: CATALOGUE.sources,
  models: CATALOGUE.models.map((m) => ({
    model_pattern: m.pattern,
    provider: m.provider,
    host: m.host ?? null,
    input_price_per_million: m.input,
    output_price_per_million: m.output,
    cache_read_input_price_per_million: m.cache_read ?? null,
    cache_creation_input_price_per_million: m.cache_creation ?? null,
    long_context: m.long_context ?? null,
    input_includes_cached_tokens: inputIncludesCached(m),
    source: m.source,
  })),
};

/** A start date: an RFC 3339 date-time, or a date meaning 00:00 UTC that day. */
function startDate(text: string): number | null {
  return parseTimestamp(/^\d{4}-\d{2}-\d{2}$/.test(text) ? `${text}T00:00:00Z` : text);
}

/** Faults of the fields a body sets that the schema cannot see (pattern syntax, dates, stored text). */
function checkBody(body: ModelPriceBody): ErrorItem[] {
  const faults: ErrorItem[] = [];
  if (body.model_pattern !== undefined) {
    const loc = ['body', 'model_pattern'];
    const text = textFaults(body.model_pattern, loc);
    faults.push(...text);
    if (!text.length) {
      try {
        compilePattern(body.model_pattern);
      } catch (err) {
        faults.push({
          loc,
          msg: `Value error, not a valid regular expression: ${(err as Error).message}`,
          type: 'value_error',
          input: body.model_pattern,
        });
      }
    }
  }
  if (body.start_date !== undefined && body.start_date !== null && startDate(body.start_date) === null) {
    faults.push({
      loc: ['body', 'start_date'],
      msg: 'Input should be a valid datetime or date',
      type: 'datetime_parsing',
      input: body.start_date,
    });
  }
  return faults;
}

interface CachedPricer {
  pricer: Pricer;
  generation: number;
  until: number;
}

const MAX_CACHED_PROJECTS = 1000;

export class ModelPricesService {
  private readonly pricers = new Map<string, CachedPricer>();

  constructor(
    private readonly repo: ModelPricesRepo,
    private readonly projects: ProjectsService,
    private readonly runs: RunsService,
  ) {}

  /** The prices ingestion applies to a project's records (no access check: the caller did it). */
  async pricerFor(projectId: string): Promise<Pricer> {
    const hit = this.pricers.get(projectId);
    if (hit && hit.generation === this.repo.generation && hit.until > Date.now()) return hit.pricer;
    const generation = this.repo.generation;
    const pricer = new Pricer((await this.repo.list(projectId)).map(toProjectPrice));
    if (this.pricers.size >= MAX_CACHED_PROJECTS) this.pricers.clear();
    this.pricers.set(projectId, { pricer, generation, until: Date.now() + ACCESS_CACHE_MS });
    return pricer;
  }

  async list(caller: Caller, projectId: string) {
    await this.projects.access(caller, projectId, 'viewer');
    const rows = await this.repo.list(projectId);
    return { project_prices: rows.map(describe), catalogue: CATALOGUE_VIEW };
  }

  async create(
    caller: Caller,
    projectId: string,
    body: Required<Pick<ModelPriceBody, 'model_pattern'>> & ModelPriceBody,
  ) {
    const faults = checkBody(body);
    if (faults.length) throw new ValidationError(faults);
    await this.projects.access(caller, projectId, 'editor');
    const now = nowUs();
    const row: ModelPriceRow = {
      id: newId(),
      project_id: projectId,
      model_pattern: body.model_pattern,
      input_price_per_million: body.input_price_per_million as number,
      output_price_per_million: body.output_price_per_million as number,
      cache_read_input_price_per_million: body.cache_read_input_price_per_million ?? null,
      cache_creation_input_price_per_million: body.cache_creation_input_price_per_million ?? null,
      input_includes_cached_tokens: flag(body.input_includes_cached_tokens),
      start_date: body.start_date ? startDate(body.start_date) : null,
      created_by: caller.id,
      created_at: now,
      updated_at: now,
    };
    await this.repo.insert(row);
    return describe(row);
  }

  async update(caller: Caller, projectId: string, id: string, body: ModelPriceBody) {
    const faults = checkBody(body);
    if (faults.length) throw new ValidationError(faults);
    await this.projects.access(caller, projectId, 'editor');
    const row = await this.repo.get(projectId, id);
    if (!row) throw notFound('Model price');
    const next: ModelPriceRow = { ...row, updated_at: nowUs() };
    if (body.model_pattern !== undefined) next.model_pattern = body.model_pattern;
    if (body.input_price_per_million !== undefined)
      next.input_price_per_million = body.input_price_per_million;
    if (body.output_price_per_million !== undefined)
      next.output_price_per_million = body.output_price_per_million;
    if (body.cache_read_input_price_per_million !== undefined)
      next.cache_read_input_price_per_million = body.cache_read_input_price_per_million;
    if (body.cache_creation_input_price_per_million !== undefined)
      next.cache_creation_input_price_per_million = body.cache_creation_input_price_per_million;
    if (body.input_includes_cached_tokens !== undefined)
      next.input_includes_cached_tokens = flag(body.input_includes_cached_tokens);
    if (body.start_date !== undefined) next.start_date = body.start_date ? startDate(body.start_date) : null;
    await this.repo.update(next);
    return describe(next);
  }

  async delete(caller: Caller, projectId: string, id: string) {
    await this.projects.access(caller, projectId, 'editor');
    if (!(await this.repo.delete(projectId, id))) throw notFound('Model price');
    return { message: 'Model price deleted' };
  }

  /** Models seen on the run's llm spans that neither the project's prices nor the catalogue price. */
  async modelsWithoutPrice(caller: Caller, projectId: string, runId: string) {
    await this.runs.resolve(caller, projectId, runId);
    const [pricer, models] = await Promise.all([this.pricerFor(projectId), this.repo.runModels(runId)]);
    return {
      run_id: runId,
      models: models
        .filter((m) => !pricer.hasPrice(m.model))
        .map((m) => ({ model: m.model, first_seen: toIso(m.first_seen), last_seen: toIso(m.last_seen) })),
    };
  }
}

const flag = (v: boolean | null | undefined) => (v === undefined || v === null ? null : v ? 1 : 0);
