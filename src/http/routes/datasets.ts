import multipart, { type Multipart, type MultipartFile } from '@fastify/multipart';
import { Type } from '@sinclair/typebox';
import type { FastifyInstance, FastifyRequest, FastifySchemaCompiler } from 'fastify';
import { type DatasetFileFormat, fileRows } from '../../domain/dataset-files.ts';
import { type DatasetEdit, datasetValues } from '../../domain/datasets.ts';
import { HttpError, valueError } from '../../domain/errors.ts';
import { isUuid } from '../../domain/ids.ts';
import { withErrors } from '../../schemas/common.ts';
import {
  CreateDatasetBody,
  CreateDatasetMultipart,
  CreateDatasetQuery,
  DatasetContent,
  DatasetDB,
  DatasetParams,
  DatasetProjectParams,
  DatasetVersionDB,
  DatasetVersionParams,
  IfMatchHeaders,
  LinkDatasetProject,
  ListDatasetParams,
  ListDatasetProjectsResponse,
  ListDatasetResponse,
  ListDatasetVersionParams,
  ListDatasetVersionResponse,
  PageQuery,
  UpdateDataset,
  UpdateDatasetContent,
  UpdateDatasetVersion,
} from '../../schemas/datasets.ts';
import type { CreateDataset, DatasetQuery, DatasetsService } from '../../services/datasets.ts';
import { validatorCompiler } from '../validation.ts';

const TAGS = ['datasets'];
const Message = Type.Object({ message: Type.String() });
type Id = { dataset_id: string };
type PageQ = { starting_token?: number; limit?: number };
const pageOf = (q: PageQ) => ({ offset: q.starting_token ?? 0, limit: q.limit ?? 100 });

/** The multipart form is read as a stream by the handler, not validated as a parsed body. */
const multipartStreamed: FastifySchemaCompiler<any> = (route) =>
  route.schema === CreateDatasetMultipart ? () => true : validatorCompiler(route);

/** A form field's text as the value its schema names (every multipart value is text). */
function formValue(name: string, text: string): unknown {
  const loc = ['body', name];
  if (['draft', 'hidden', 'append_suffix_if_duplicate'].includes(name)) {
    if (/^(true|1)$/i.test(text)) return true;
    if (/^(false|0|)$/i.test(text)) return false;
    throw valueError(loc, 'Input should be a valid boolean', text);
  }
  if (name === 'project_id' || name === 'copy_from_dataset_id') {
    if (text === '' || text === 'null') return null;
    if (!isUuid(text)) throw valueError(loc, 'Input should be a valid UUID', text);
    return text;
  }
  if (name === 'copy_from_dataset_version_index') {
    if (text === '' || text === 'null') return null;
    if (!/^\d+$/.test(text) || Number(text) < 1)
      throw valueError(loc, 'Input should be a positive integer', text);
    return Number(text);
  }
  if (name === 'name') {
    if (text.length > 255) throw valueError(loc, 'String should have at most 255 characters', text);
    return text;
  }
  return undefined;
}

function formatOf(query: string | undefined, filename: string | undefined): DatasetFileFormat {
  const f = query ?? (/\.csv$/i.test(filename ?? '') ? 'csv' : 'jsonl');
  if (f !== 'jsonl' && f !== 'csv')
    throw valueError(['query', 'format'], `Spanbase reads jsonl and csv dataset files, not ${f}`, f);
  return f;
}

/**
 * POST /datasets as multipart: the fields, then the file, streamed into rows (never held whole).
 * A file that fails part-way leaves no dataset (DatasetsService.create).
 */
async function createFromForm(
  req: FastifyRequest<{ Querystring: { format?: string; hidden?: boolean } }>,
  datasets: DatasetsService,
  maxBytes: number,
) {
  const fields: Record<string, unknown> = {};
  let created: Awaited<ReturnType<DatasetsService['create']>> | null = null;
  let file: MultipartFile | null = null;
  // A multipart content type without its boundary cannot be read at all: the client's fault.
  if (!/;\s*boundary=/i.test(String(req.headers['content-type'] ?? '')))
    throw new HttpError(400, 'A multipart/form-data body needs a boundary in its Content-Type');
  for await (const part of readableParts(req)) {
    if (created) {
      if (part.type === 'file') part.file.resume();
      await datasets.delete(req.caller, created.id);
      throw valueError(['body', part.fieldname], 'Send the form fields before the file, and one file only');
    }
    if (part.type === 'field') {
      const v = formValue(part.fieldname, String(part.value));
      if (v !== undefined) fields[part.fieldname] = v;
      continue;
    }
    file = part;
    const input = {
      ...fields,
      name: (fields.name as string | null | undefined) ?? part.filename ?? 'dataset',
      hidden: fields.hidden ?? req.query.hidden,
    } as CreateDataset;
    try {
      created = await datasets.create(
        req.caller,
        input,
        fileRows(formatOf(req.query.format, part.filename), part.file, maxBytes),
      );
    } finally {
      // What is left of a refused file is read and dropped, so the answer reaches the client.
      file.file.resume();
    }
  }
  if (created) return created;
  const name = fields.name as string | undefined;
  if (!name) throw valueError(['body', 'name'], 'A dataset needs a name (or a file whose name is used)');
  return datasets.create(req.caller, { ...(fields as object), name } as CreateDataset);
}

/**
 * The form's parts; a body the multipart parser cannot read (a missing closing boundary, a truncated
 * part) is the client's fault, 400, where the parser would throw a plain Error (a 500).
 */
async function* readableParts(req: FastifyRequest): AsyncGenerator<Multipart> {
  const parts = req.parts()[Symbol.asyncIterator]();
  for (;;) {
    let next: IteratorResult<Multipart>;
    try {
      next = await parts.next();
    } catch (err) {
      if ((err as { statusCode?: number }).statusCode) throw err;
      throw new HttpError(400, `The multipart/form-data body could not be read: ${(err as Error).message}`);
    }
    if (next.done) return;
    yield next.value;
  }
}

function listQuery(body: any, page: { offset: number; limit: number }) {
  const q: DatasetQuery = {
    sort: body?.sort
      ? { column: body.sort.name, ascending: body.sort.ascending ?? true }
      : { column: 'created_at', ascending: false },
    ...page,
  };
  for (const [i, f] of (body?.filters ?? []).entries()) {
    const values = Array.isArray(f.value) ? f.value : [f.value];
    if ((f.operator === 'eq' || f.operator === 'ne' || f.operator === 'contains') && Array.isArray(f.value))
      throw valueError(['body', 'filters', i, 'value'], `The ${f.operator} operator takes one value`);
    if (f.name === 'name') q.name = { op: f.operator, values, caseSensitive: f.case_sensitive ?? true };
    else if (f.name === 'id') q.ids = { op: f.operator ?? 'eq', values };
    else if (f.name === 'draft') q.draft = { op: f.operator, value: f.value };
    else if (f.name === 'used_in_project') q.inProject = f.value;
    else q.notInProject = f.value;
  }
  return q;
}

export default async function datasetRoutes(app: FastifyInstance) {
  const { datasets, config } = app.services;
  // Here only (this plugin's scope): multipart uploads of dataset files, one file a request.
  await app.register(multipart, {
    limits: { files: 1, fields: 20, fieldSize: 64 * 1024, parts: 21, fileSize: config.datasetMaxBytes + 1 },
  });
  // The official client posts `versions/query` with no body, which axios labels as a form.
  app.addContentTypeParser(
    'application/x-www-form-urlencoded',
    { parseAs: 'string' },
    (_req: FastifyRequest, body: string, done: (err: Error | null, body?: unknown) => void) =>
      body.trim() === ''
        ? done(null, undefined)
        : done(new HttpError(415, 'Send a JSON body (content-type: application/json)')),
  );

  app.post<{ Querystring: { format?: string; hidden?: boolean }; Body: any }>(
    '/v2/datasets',
    {
      validatorCompiler: multipartStreamed,
      schema: {
        summary: 'Create a dataset from a JSONL or CSV file, from rows, or as a copy',
        description:
          'multipart/form-data as the official client sends it (fields, then `file`), or JSON with `rows`. The file is streamed: memory stays flat in its size. A file that is not UTF-8, a JSONL line that is not a JSON object, a broken CSV record or a file over SPANBASE_DATASET_MAX_BYTES answers 422 naming the line, and no dataset is created. `project_id` (editors of that project) makes the project use the dataset. The upload is version 1.',
        tags: TAGS,
        querystring: CreateDatasetQuery,
        body: CreateDatasetBody,
        response: withErrors({ 200: DatasetDB }),
      } as any,
    },
    async (req) => {
      if (req.isMultipart()) return createFromForm(req, datasets, config.datasetMaxBytes);
      const b = req.body as CreateDataset & { rows?: Record<string, unknown>[] };
      const rows = b.rows;
      return datasets.create(
        req.caller,
        { ...b, hidden: b.hidden ?? req.query.hidden },
        rows ? rowsOf(rows) : undefined,
      );
    },
  );

  app.get<{ Querystring: PageQ }>(
    '/v2/datasets',
    {
      schema: {
        summary: 'List the datasets the caller may see',
        description:
          'Newest first. Datasets are seen through the projects that use them, and by their creator.',
        tags: TAGS,
        querystring: PageQuery,
        response: withErrors({ 200: ListDatasetResponse }),
      },
    },
    async (req) => datasets.list(req.caller, listQuery(null, pageOf(req.query))),
  );

  app.post<{ Querystring: PageQ; Body: any }>(
    '/v2/datasets/query',
    {
      schema: {
        summary: 'Query datasets by name, id, draft or project',
        description:
          'Filters (ANDed): `name` (eq, ne, contains, one_of, not_in; case_sensitive), `id`, `draft`, `used_in_project`, `not_in_project`. Sorts: name, created_at (default, descending), updated_at, num_rows, project_count.',
        tags: TAGS,
        querystring: PageQuery,
        body: ListDatasetParams,
        response: withErrors({ 200: ListDatasetResponse }),
      },
    },
    async (req) => datasets.list(req.caller, listQuery(req.body, pageOf(req.query))),
  );

  app.get<{ Params: Id }>(
    '/v2/datasets/:dataset_id',
    {
      schema: {
        summary: 'Get a dataset',
        tags: TAGS,
        params: DatasetParams,
        response: withErrors({ 200: DatasetDB }),
      },
    },
    async (req) => datasets.get(req.caller, req.params.dataset_id),
  );

  app.patch<{ Params: Id; Body: any }>(
    '/v2/datasets/:dataset_id',
    {
      schema: {
        summary: 'Rename a dataset or publish a draft (editors)',
        description: 'A taken name answers 409 unless `name` is `{value, append_suffix_if_duplicate: true}`.',
        tags: TAGS,
        params: DatasetParams,
        body: UpdateDataset,
        response: withErrors({ 200: DatasetDB }),
      },
    },
    async (req) => {
      const b = req.body as {
        name?: string | { value: string; append_suffix_if_duplicate?: boolean } | null;
        draft?: boolean | null;
      };
      const n = b.name;
      return datasets.update(req.caller, req.params.dataset_id, {
        name: n == null ? undefined : typeof n === 'string' ? n : n.value,
        appendSuffix: typeof n === 'object' && n !== null ? n.append_suffix_if_duplicate : false,
        draft: b.draft ?? undefined,
      });
    },
  );

  app.delete<{ Params: Id }>(
    '/v2/datasets/:dataset_id',
    {
      schema: {
        summary: 'Delete a dataset with all its versions (owners)',
        tags: TAGS,
        params: DatasetParams,
        response: withErrors({ 200: Message }),
      },
    },
    async (req) => {
      await datasets.delete(req.caller, req.params.dataset_id);
      return { message: 'Dataset deleted' };
    },
  );

  app.get<{ Params: Id; Querystring: PageQ }>(
    '/v2/datasets/:dataset_id/content',
    {
      schema: {
        summary: "A page of the current version's rows, with its ETag",
        description:
          'The `ETag` header names the current version; send it as `If-Match` with PATCH to edit. Pages run until `next_starting_token` is null.',
        tags: TAGS,
        params: DatasetParams,
        querystring: PageQuery,
        response: withErrors({ 200: DatasetContent }),
      },
    },
    async (req, reply) => {
      const c = await datasets.content(req.caller, req.params.dataset_id, pageOf(req.query));
      if (c.etag) reply.header('etag', c.etag);
      return c.body;
    },
  );

  app.patch<{ Params: Id; Body: { edits: DatasetEdit[] }; Headers: { 'if-match'?: string } }>(
    '/v2/datasets/:dataset_id/content',
    {
      schema: {
        summary: 'Edit rows: append, prepend, update, delete (editors); one new version',
        description:
          "Edits apply in order and together make one new version (its counts of rows added, removed and edited are in the version history). `update_row` sets the columns it names and keeps the others. With `If-Match`, 412 when the dataset changed since that ETag was read. The new ETag is in the answer's `ETag` header.",
        tags: TAGS,
        params: DatasetParams,
        headers: IfMatchHeaders,
        body: UpdateDatasetContent,
        response: withErrors({ 200: DatasetVersionDB, 412: Type.Object({ detail: Type.String() }) }),
      },
    },
    async (req, reply) => {
      const r = await datasets.edit(
        req.caller,
        req.params.dataset_id,
        req.headers['if-match'],
        req.body.edits,
      );
      reply.header('etag', r.etag);
      return r.version;
    },
  );

  app.post<{ Params: Id; Querystring: PageQ; Body: any }>(
    '/v2/datasets/:dataset_id/versions/query',
    {
      schema: {
        summary: 'The version history of a dataset',
        description: 'Oldest first unless `sort.ascending` is false. The body may be empty.',
        tags: TAGS,
        params: DatasetParams,
        querystring: PageQuery,
        body: ListDatasetVersionParams,
        response: withErrors({ 200: ListDatasetVersionResponse }),
      },
    },
    async (req) =>
      datasets.versions(req.caller, req.params.dataset_id, {
        ...pageOf(req.query),
        ascending: (req.body as { sort?: { ascending?: boolean } | null } | null)?.sort?.ascending ?? true,
      }),
  );

  app.get<{ Params: Id & { version_index: number }; Querystring: PageQ }>(
    '/v2/datasets/:dataset_id/versions/:version_index/content',
    {
      schema: {
        summary: "A page of a version's rows",
        tags: TAGS,
        params: DatasetVersionParams,
        querystring: PageQuery,
        response: withErrors({ 200: DatasetContent }),
      },
    },
    async (req) =>
      (
        await datasets.content(req.caller, req.params.dataset_id, {
          ...pageOf(req.query),
          version: req.params.version_index,
        })
      ).body,
  );

  app.patch<{ Params: Id & { version_index: number }; Body: { name?: string | null } }>(
    '/v2/datasets/:dataset_id/versions/:version_index',
    {
      schema: {
        summary: 'Name a version (editors)',
        tags: TAGS,
        params: DatasetVersionParams,
        body: UpdateDatasetVersion,
        response: withErrors({ 200: DatasetVersionDB }),
      },
    },
    async (req) =>
      datasets.renameVersion(
        req.caller,
        req.params.dataset_id,
        req.params.version_index,
        req.body.name ?? null,
      ),
  );

  app.get<{ Params: Id; Querystring: PageQ }>(
    '/v2/datasets/:dataset_id/projects',
    {
      schema: {
        summary: 'The projects that use a dataset (those the caller may see)',
        tags: TAGS,
        params: DatasetParams,
        querystring: PageQuery,
        response: withErrors({ 200: ListDatasetProjectsResponse }),
      },
    },
    async (req) => datasets.projectsOf(req.caller, req.params.dataset_id, pageOf(req.query)),
  );

  app.post<{ Params: Id; Body: { project_id: string } }>(
    '/v2/datasets/:dataset_id/projects',
    {
      schema: {
        summary: 'Share a dataset with a project (Spanbase extension)',
        description:
          "The dataset's owners, who must be editors of the project. The project's viewers then read the dataset and its editors edit it.",
        tags: TAGS,
        params: DatasetParams,
        body: LinkDatasetProject,
        response: withErrors({ 200: ListDatasetProjectsResponse }),
      },
    },
    async (req) => datasets.linkProject(req.caller, req.params.dataset_id, req.body.project_id),
  );

  app.delete<{ Params: Id & { project_id: string } }>(
    '/v2/datasets/:dataset_id/projects/:project_id',
    {
      schema: {
        summary: 'Stop sharing a dataset with a project (Spanbase extension; owners)',
        tags: TAGS,
        params: DatasetProjectParams,
        response: withErrors({ 200: Message }),
      },
    },
    async (req) => {
      await datasets.unlinkProject(req.caller, req.params.dataset_id, req.params.project_id);
      return { message: 'Project no longer uses the dataset' };
    },
  );
}

/** Rows of a JSON body as one import batch. */
async function* rowsOf(rows: Record<string, unknown>[]) {
  yield rows.map((r, i) => ({ line: i + 1, values: datasetValues(r) }));
}
