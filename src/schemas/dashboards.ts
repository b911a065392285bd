import { Type } from '@sinclair/typebox';
import {
  AGGREGATIONS,
  MAX_EPOCH_SECONDS,
  MAX_INTERVAL_MINS,
  MIN_EPOCH_SECONDS,
  RELATIVE_TIME_PATTERN,
  WIDGET_TYPES,
} from '../domain/dashboards.ts';
import { AnyKeyMap, Nullable, Uuid } from './common.ts';

const enumOf = <T extends string>(values: readonly T[], description?: string) =>
  Type.Unsafe<T>({ type: 'string', enum: [...values], ...(description ? { description } : {}) });

export const LIMIT = 50;

const Name = Type.String({ minLength: 1, maxLength: 255 });
const Description = Type.String({ maxLength: 1000 });
const EpochSeconds = Type.Integer({ minimum: MIN_EPOCH_SECONDS, maximum: MAX_EPOCH_SECONDS });
const IntervalMins = Type.Integer({ minimum: 1, maximum: MAX_INTERVAL_MINS });
const RelativeTime = Type.String({
  maxLength: 64,
  pattern: RELATIVE_TIME_PATTERN,
  description:
    'A rolling window ending now, such as last_7_days (a month counts as 30 days; at most 5 years)',
});
/** Checked in code (query/filters.ts) so that every fault points at its exact place. */
const FilterExpression = Type.Unknown({
  description:
    'A filter expression: {"filter": {...}}, {"and": [...]}, {"or": [...]} or {"not": {...}} over the record columns',
});

export const WidgetTypeSchema = enumOf(WIDGET_TYPES);
export const AggregationSchema = enumOf(AGGREGATIONS);
// Keys are any text: Type.Record's key pattern `^(.*)$` misses keys with a line break, which
// would be dropped (schemas/common.ts AnyKeyMap).
const Dataset = Type.Array(AnyKeyMap(Type.Array(Type.String({ maxLength: 1000 }), { maxItems: 1000 })), {
  maxItems: LIMIT,
});

export const DashboardParams = Type.Object({ project_id: Uuid, log_stream_id: Uuid });
export const DashboardIdParams = Type.Object({ project_id: Uuid, log_stream_id: Uuid, dashboard_id: Uuid });
export const WidgetParams = Type.Object({
  project_id: Uuid,
  log_stream_id: Uuid,
  dashboard_id: Uuid,
  widget_id: Uuid,
});
export const SectionParams = Type.Object({
  project_id: Uuid,
  log_stream_id: Uuid,
  dashboard_id: Uuid,
  section_id: Uuid,
});

export const UpdateDashboardQuery = Type.Object({ trends_dashboard_id: Type.Optional(Nullable(Uuid)) });

/** api.md endpoint 1: every field optional and nullable. */
export const UpdateDashboard = Type.Object({
  name: Type.Optional(Nullable(Name)),
  description: Type.Optional(Nullable(Description)),
  interval_mins: Type.Optional(Nullable(IntervalMins)),
  layout_map: Type.Optional(Nullable(AnyKeyMap(Type.Array(Type.Integer())))),
  start_time: Type.Optional(Nullable(EpochSeconds)),
  end_time: Type.Optional(Nullable(EpochSeconds)),
  relative_time: Type.Optional(Nullable(RelativeTime)),
  filter_tree: Type.Optional(Nullable(FilterExpression)),
  group_by: Type.Optional(Nullable(Type.String({ maxLength: 1000 }))),
  is_favorited: Type.Optional(
    Nullable(
      Type.Boolean({
        description: 'Marks the dashboard as a favourite (listed after the default one in the console)',
      }),
    ),
  ),
});

export const CreateWidget = Type.Object({
  name: Name,
  description: Type.Optional(Nullable(Description)),
  type: WidgetTypeSchema,
  dataset: Type.Optional(Nullable(Dataset)),
  metric: Type.String({ minLength: 1, maxLength: 1000 }),
  aggregation: AggregationSchema,
  section_id: Type.Optional(Nullable(Uuid)),
});

export const UpdateWidget = Type.Object({
  name: Type.Optional(Name),
  description: Type.Optional(Nullable(Description)),
  type: Type.Optional(WidgetTypeSchema),
  dataset: Type.Optional(Nullable(Dataset)),
  metric: Type.Optional(Type.String({ minLength: 1, maxLength: 1000 })),
  aggregation: Type.Optional(AggregationSchema),
  section_id: Type.Optional(Nullable(Uuid)),
});

const Color = Type.String({ maxLength: 64 });
export const CreateSection = Type.Object({
  name: Name,
  description: Type.Optional(Nullable(Description)),
  color: Type.Optional(Nullable(Color)),
});
export const UpdateSection = Type.Object({
  name: Type.Optional(Name),
  description: Type.Optional(Nullable(Description)),
  color: Type.Optional(Nullable(Color)),
});

export const Widget = Type.Object(
  {
    id: Uuid,
    name: Type.String(),
    description: Nullable(Type.String()),
    type: Type.String(),
    dataset: Nullable(Type.Array(AnyKeyMap(Type.Array(Type.String())))),
    metric: Type.String(),
    aggregation: Type.String(),
    section_id: Nullable(Uuid),
  },
  { title: 'Widget' },
);

export const Section = Type.Object(
  {
    id: Uuid,
    name: Type.String(),
    description: Nullable(Type.String()),
    color: Nullable(Type.String()),
    widgets: Type.Array(Widget),
  },
  { title: 'Section' },
);

export const Dashboard = Type.Object(
  {
    id: Uuid,
    name: Type.String(),
    description: Nullable(Type.String()),
    is_default: Type.Boolean(),
    visibility: Type.String(),
    created_by: Nullable(Uuid),
    is_favorited: Type.Boolean(),
    log_stream_id: Uuid,
    project_id: Uuid,
    widgets: Type.Array(Widget, { description: 'Widgets outside every section' }),
    sections: Type.Array(Section),
    layout_map: Type.Object({}, { additionalProperties: true }),
    interval_mins: Type.Integer(),
    group_by: Nullable(Type.String()),
    filter_tree: Nullable(Type.Unknown()),
    start_time: Type.Integer({ description: 'Epoch seconds; resolved from relative_time when that is set' }),
    end_time: Type.Integer({ description: 'Epoch seconds; resolved from relative_time when that is set' }),
    relative_time: Nullable(Type.String()),
  },
  { title: 'TrendsDashboard' },
);

export const QueryDashboard = Type.Object({
  widget_ids: Type.Optional(Nullable(Type.Array(Uuid, { maxItems: LIMIT * (LIMIT + 1) }))),
  interval_mins: Type.Optional(Nullable(IntervalMins)),
  start_time: Type.Optional(Nullable(EpochSeconds)),
  end_time: Type.Optional(Nullable(EpochSeconds)),
  relative_time: Type.Optional(Nullable(RelativeTime)),
  group_limit: Type.Optional(Nullable(Type.Integer({ minimum: 1, maximum: 100 }))),
});

const Value = Nullable(Type.Number());
export const DashboardData = Type.Object({
  dashboard_id: Uuid,
  start_time: Type.Integer(),
  end_time: Type.Integer(),
  interval_mins: Type.Integer(),
  group_by: Nullable(Type.String()),
  buckets: Type.Array(Type.Integer(), { description: 'Start (epoch seconds) of each bucket' }),
  groups: Type.Array(Type.Unknown(), {
    description: 'The group_by values shown (most records first), or [null] without group_by',
  }),
  other_groups: Type.Integer({ description: 'How many more group values matched but are not shown' }),
  answered_by: Type.Union([Type.Literal('rollup'), Type.Literal('scan')], {
    description:
      'How the data was computed. `rollup`: from aggregates kept per hour and group as records arrive (Count, Sum, Average, Min, Max, PercentageTrue and PercentageFalse exact, equal to a scan; P50, P90, P95 and P99 from a DDSketch, within 1% relative error of the exact percentile). `scan`: from every record of the range (percentiles exact); `fallback_reason` says why the rollups could not answer.',
  }),
  fallback_reason: Nullable(
    Type.String({
      description:
        'Why the records were scanned instead of the rollups (null when answered by rollup): a filter_tree, an interval that is not whole hours, a group_by or metric the rollups do not keep (they keep type, name, model, metadata keys of at most 200 values per log stream and scores; record columns and scores as metrics), a log stream with records from before rollups, or many recently changed hours.',
    }),
  ),
  widgets: Type.Array(
    Type.Object({
      id: Uuid,
      name: Type.String(),
      metric: Type.String(),
      aggregation: Type.String(),
      section_id: Nullable(Uuid),
      series: Type.Array(
        Type.Object({
          group: Type.Unknown(),
          values: Type.Array(Value, { description: 'One value per bucket' }),
          total: Value,
        }),
      ),
    }),
  ),
});
