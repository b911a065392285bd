import type { FastifyInstance, FastifySchemaCompiler } from 'fastify';
import { ProjectParams, withErrors } from '../../schemas/common.ts';
import {
  AddQueueRecords,
  Annotation,
  AnnotationAuthorQuery,
  AnnotationParams,
  CreateQueue,
  CreateTemplate,
  Deleted,
  Queue,
  QueueParams,
  QueueProgress,
  QueueRecordsChanged,
  RemoveQueueRecords,
  SetAnnotation,
  Template,
  TemplateParams,
  UpdateQueue,
  UpdateTemplate,
} from '../../schemas/annotations.ts';
import { SearchRecordsBody, SearchRecordsPage, forAjv } from '../../schemas/search.ts';
import type { QueueBody, QueueRecordsBody } from '../../services/annotation-queues.ts';
import type { AnnotationAuthor, AnnotationBody, TemplateBody } from '../../services/annotations.ts';
import type { SearchBody } from '../../services/search.ts';
import { validatorCompiler } from '../validation.ts';
import { Type } from '@sinclair/typebox';

/** Filters and filter trees are documented in the schema but validated in code (exact locs). */
const compileOpenedUp: FastifySchemaCompiler<any> = (route) =>
  validatorCompiler({ ...route, schema: route.httpPart === 'body' ? forAjv(route.schema) : route.schema });

export default async function annotationRoutes(app: FastifyInstance) {
  const { annotations, annotationQueues: queues } = app.services;
  type P = { project_id: string };
  type TP = P & { template_id: string };
  type AP = P & { record_id: string; template_id: string };
  type QP = P & { queue_id: string };
  const tags = ['annotations'];

  // --- templates
  app.get<{ Params: P }>(
    '/v2/projects/:project_id/annotation_templates',
    {
      schema: {
        tags,
        summary: 'Annotation templates of a project',
        params: ProjectParams,
        response: withErrors({ 200: Type.Array(Template) }),
      },
    },
    async (req) => annotations.listTemplates(req.caller, req.params.project_id),
  );
  app.post<{ Params: P; Body: TemplateBody }>(
    '/v2/projects/:project_id/annotation_templates',
    {
      schema: {
        tags,
        summary: 'Create an annotation template',
        params: ProjectParams,
        body: CreateTemplate,
        response: withErrors({ 200: Template }),
      },
    },
    async (req) => annotations.createTemplate(req.caller, req.params.project_id, req.body),
  );
  app.patch<{ Params: TP; Body: { name?: string | null; description?: string | null } }>(
    '/v2/projects/:project_id/annotation_templates/:template_id',
    {
      schema: {
        tags,
        summary: 'Rename an annotation template',
        params: TemplateParams,
        body: UpdateTemplate,
        response: withErrors({ 200: Template }),
      },
    },
    async (req) =>
      annotations.updateTemplate(req.caller, req.params.project_id, req.params.template_id, req.body),
  );
  app.delete<{ Params: TP }>(
    '/v2/projects/:project_id/annotation_templates/:template_id',
    {
      schema: {
        tags,
        summary: 'Delete an annotation template and its annotations',
        params: TemplateParams,
        response: withErrors({ 200: Deleted }),
      },
    },
    async (req) => {
      await annotations.deleteTemplate(req.caller, req.params.project_id, req.params.template_id);
      return { message: 'Annotation template deleted' };
    },
  );

  // --- annotations
  app.put<{ Params: AP; Body: AnnotationBody }>(
    '/v2/projects/:project_id/records/:record_id/annotations/:template_id',
    {
      schema: {
        tags,
        summary: "Set the caller's (or an end user's) annotation of a record",
        params: AnnotationParams,
        body: SetAnnotation,
        response: withErrors({ 200: Annotation }),
      },
    },
    async (req) =>
      annotations.set(
        req.caller,
        req.params.project_id,
        req.params.record_id,
        req.params.template_id,
        req.body,
      ),
  );
  app.delete<{ Params: AP; Querystring: AnnotationAuthor }>(
    '/v2/projects/:project_id/records/:record_id/annotations/:template_id',
    {
      schema: {
        tags,
        summary: "Remove the caller's (or an end user's) annotation of a record",
        params: AnnotationParams,
        querystring: AnnotationAuthorQuery,
        response: withErrors({ 200: Deleted }),
      },
    },
    async (req) => {
      const p = req.params;
      await annotations.delete(req.caller, p.project_id, p.record_id, p.template_id, req.query ?? {});
      return { message: 'Annotation deleted' };
    },
  );

  // --- queues
  app.get<{ Params: P }>(
    '/v2/projects/:project_id/annotation_queues',
    {
      schema: {
        tags,
        summary: 'Annotation queues (annotators: those they are members of)',
        params: ProjectParams,
        response: withErrors({ 200: Type.Array(Queue) }),
      },
    },
    async (req) => queues.list(req.caller, req.params.project_id),
  );
  app.post<{ Params: P; Body: QueueBody & { name: string } }>(
    '/v2/projects/:project_id/annotation_queues',
    {
      schema: {
        tags,
        summary: 'Create an annotation queue',
        params: ProjectParams,
        body: CreateQueue,
        response: withErrors({ 200: Queue }),
      },
    },
    async (req) => queues.create(req.caller, req.params.project_id, req.body),
  );
  app.get<{ Params: QP }>(
    '/v2/projects/:project_id/annotation_queues/:queue_id',
    {
      schema: {
        tags,
        summary: 'An annotation queue',
        params: QueueParams,
        response: withErrors({ 200: Queue }),
      },
    },
    async (req) => queues.get(req.caller, req.params.project_id, req.params.queue_id),
  );
  app.patch<{ Params: QP; Body: QueueBody }>(
    '/v2/projects/:project_id/annotation_queues/:queue_id',
    {
      schema: {
        tags,
        summary: 'Change an annotation queue',
        params: QueueParams,
        body: UpdateQueue,
        response: withErrors({ 200: Queue }),
      },
    },
    async (req) => queues.update(req.caller, req.params.project_id, req.params.queue_id, req.body),
  );
  app.delete<{ Params: QP }>(
    '/v2/projects/:project_id/annotation_queues/:queue_id',
    {
      schema: {
        tags,
        summary: 'Delete an annotation queue (its records and annotations stay)',
        params: QueueParams,
        response: withErrors({ 200: Deleted }),
      },
    },
    async (req) => {
      await queues.delete(req.caller, req.params.project_id, req.params.queue_id);
      return { message: 'Annotation queue deleted' };
    },
  );
  app.get<{ Params: QP }>(
    '/v2/projects/:project_id/annotation_queues/:queue_id/progress',
    {
      schema: {
        tags,
        summary: "A queue's progress: records each member annotated on every template, and those all did",
        params: QueueParams,
        response: withErrors({ 200: QueueProgress }),
      },
    },
    async (req) => queues.progress(req.caller, req.params.project_id, req.params.queue_id),
  );
  app.post<{ Params: QP; Body: QueueRecordsBody }>(
    '/v2/projects/:project_id/annotation_queues/:queue_id/records',
    {
      schema: {
        tags,
        summary: 'Add records to a queue: by id, or every record a search finds',
        params: QueueParams,
        body: AddQueueRecords,
        response: withErrors({ 200: QueueRecordsChanged }),
      },
      validatorCompiler: compileOpenedUp,
    },
    async (req) => queues.addRecords(req.caller, req.params.project_id, req.params.queue_id, req.body),
  );
  app.delete<{ Params: QP; Body: { record_ids: string[] } }>(
    '/v2/projects/:project_id/annotation_queues/:queue_id/records',
    {
      schema: {
        tags,
        summary: 'Remove records from a queue',
        params: QueueParams,
        body: RemoveQueueRecords,
        response: withErrors({ 200: QueueRecordsChanged }),
      },
    },
    async (req) => queues.removeRecords(req.caller, req.params.project_id, req.params.queue_id, req.body),
  );
  app.post<{ Params: QP; Body: SearchBody }>(
    '/v2/projects/:project_id/annotation_queues/:queue_id/records/search',
    {
      schema: {
        tags,
        summary: "Search a queue's records (fully_annotated works here)",
        params: QueueParams,
        body: SearchRecordsBody,
        response: withErrors({ 200: SearchRecordsPage }),
      },
      validatorCompiler: compileOpenedUp,
    },
    // The service answers the page as a body already serialized through SearchRecordsPage.
    async (req, reply) =>
      reply
        .type('application/json; charset=utf-8')
        .send(await queues.searchRecords(req.caller, req.params.project_id, req.params.queue_id, req.body)),
  );
}
