import { type FormEvent, useId, useState } from 'react';
import type { Column, Section, Widget } from '../lib/api-types.ts';
import { AGGREGATION_LABELS, WIDGET_TYPE_LABELS, metricColumns } from '../lib/dashboard-view.ts';
import { FieldErrors } from '../lib/field-errors.ts';
import { FieldError, FormErrors, invalidProps } from './FieldError.tsx';

const FIELDS = ['name', 'type', 'aggregation', 'metric', 'section_id'] as const;

export interface WidgetBody {
  name: string;
  type: string;
  aggregation: string;
  metric: string;
  section_id: string | null;
}

/**
 * Add or edit a widget: its name, type, aggregation, metric (the columns the aggregation takes) and
 * section. The API's 422 items are shown beside the fields they point at.
 */
export function WidgetForm({
  widget,
  columns,
  sections,
  sectionId,
  save,
  close,
}: {
  widget: Widget | null;
  columns: Column[];
  sections: Section[];
  sectionId: string | null;
  save: (body: WidgetBody) => Promise<void>;
  close: () => void;
}) {
  const id = useId();
  const [errors, setErrors] = useState(FieldErrors.none);
  const [busy, setBusy] = useState(false);
  const [aggregation, setAggregation] = useState(widget?.aggregation ?? 'Count');
  const choices = metricColumns(columns, aggregation);
  const current = widget?.metric;
  const submit = async (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    const f = new FormData(e.currentTarget);
    const text = (k: string) => String(f.get(k) ?? '');
    setBusy(true);
    try {
      await save({
        name: text('name'),
        type: text('type'),
        aggregation: text('aggregation'),
        metric: text('metric'),
        section_id: text('section_id') || null,
      });
      close();
    } catch (err) {
      setErrors(FieldErrors.of(err, FIELDS));
    } finally {
      setBusy(false);
    }
  };
  const field = (name: (typeof FIELDS)[number], label: string, input: React.ReactNode) => (
    <div className="field">
      <label htmlFor={`${id}-${name}`}>{label}</label>
      {input}
      <FieldError errors={errors} field={name} id={`${id}-${name}-error`} />
    </div>
  );
  const props = (name: (typeof FIELDS)[number]) => ({
    name,
    id: `${id}-${name}`,
    ...invalidProps(errors, name, `${id}-${name}-error`),
  });
  return (
    <form
      className="widget-form"
      onSubmit={submit}
      aria-label={widget ? `Edit ${widget.name}` : 'New widget'}
    >
      <h2>{widget ? `Edit widget “${widget.name}”` : 'New widget'}</h2>
      <div className="form-grid">
        {field(
          'name',
          'Widget name',
          <input {...props('name')} defaultValue={widget?.name ?? ''} maxLength={255} />,
        )}
        {field(
          'type',
          'Widget type',
          <select {...props('type')} defaultValue={widget?.type ?? 'line_chart'}>
            {Object.entries(WIDGET_TYPE_LABELS).map(([v, l]) => (
              <option key={v} value={v}>
                {l}
              </option>
            ))}
          </select>,
        )}
        {field(
          'aggregation',
          'Aggregation',
          <select
            {...props('aggregation')}
            value={aggregation}
            onChange={(e) => setAggregation(e.currentTarget.value)}
          >
            {Object.entries(AGGREGATION_LABELS).map(([v, l]) => (
              <option key={v} value={v}>
                {l}
              </option>
            ))}
          </select>,
        )}
        {field(
          'metric',
          'Metric',
          <select {...props('metric')} defaultValue={current ?? choices[0]?.id ?? ''} key={aggregation}>
            {current && !choices.some((c) => c.id === current) && <option value={current}>{current}</option>}
            {choices.map((c) => (
              <option key={c.id} value={c.id}>
                {c.label} ({c.id})
              </option>
            ))}
          </select>,
        )}
        {field(
          'section_id',
          'Section',
          <select
            {...props('section_id')}
            defaultValue={widget ? (widget.section_id ?? '') : (sectionId ?? '')}
          >
            <option value="">No section</option>
            {sections.map((s) => (
              <option key={s.id} value={s.id}>
                {s.name}
              </option>
            ))}
          </select>,
        )}
      </div>
      <FormErrors errors={errors} />
      <div className="form-actions">
        <button type="submit" className="button primary" disabled={busy}>
          {widget ? 'Save widget' : 'Add widget'}
        </button>
        <button type="button" className="button ghost" onClick={close}>
          Cancel
        </button>
      </div>
    </form>
  );
}
