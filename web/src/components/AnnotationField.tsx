import { type FocusEvent, type KeyboardEvent, type Ref, useEffect, useState } from 'react';
import { keyHint } from '../lib/annotation-keys.ts';
import type { AnnotationTemplate } from '../lib/api-types.ts';

/** Where the save of one annotation stands. */
export type SaveState = { kind: 'saving' } | { kind: 'saved' } | { kind: 'error'; message: string } | null;

interface FieldProps {
  template: AnnotationTemplate;
  /** The caller's value; undefined when they have not annotated this template. */
  value: unknown;
  active: boolean;
  state: SaveState;
  onSet: (value: unknown) => void;
  onClear: () => void;
  onActivate: () => void;
  /** The field's text input (score, text, tags), which Enter focuses. */
  inputRef: Ref<HTMLInputElement & HTMLTextAreaElement>;
}

const sameList = (a: unknown, b: unknown) => JSON.stringify(a ?? null) === JSON.stringify(b ?? null);

/** A value as a text input shows it: tags joined by commas. */
const shown = (v: unknown) =>
  v === undefined ? '' : Array.isArray(v) ? (v as string[]).join(', ') : String(v);

/** A text-like input that saves when it loses focus (Escape leaves it, Enter too but in a text area). */
function TypedInput({
  template,
  value,
  onSet,
  onClear,
  inputRef,
}: Pick<FieldProps, 'template' | 'value' | 'onSet' | 'onClear' | 'inputRef'>) {
  const [draft, setDraft] = useState(shown(value));
  useEffect(() => setDraft(shown(value)), [value]);
  const commit = () => {
    const text = draft.trim();
    if (template.type === 'tags') {
      const tags = [...new Set(text.split(',').map((t) => t.trim()))].filter(Boolean);
      // Leaving an empty field that had no annotation saves nothing.
      if (!sameList(tags, value ?? [])) onSet(tags);
    } else if (template.type === 'score') {
      if (text === '') {
        if (value !== undefined) onClear();
      } else if (Number(text) !== value) onSet(Number(text));
    } else if (draft !== (value ?? '')) onSet(draft);
  };
  const onKeyDown = (e: KeyboardEvent<HTMLInputElement & HTMLTextAreaElement>) => {
    if (e.key === 'Escape' || (e.key === 'Enter' && (template.type !== 'text' || e.ctrlKey || e.metaKey))) {
      e.preventDefault();
      e.currentTarget.blur();
    }
  };
  const common = {
    ref: inputRef,
    value: draft,
    'aria-label': template.name,
    onChange: (e: { currentTarget: { value: string } }) => setDraft(e.currentTarget.value),
    onBlur: (_: FocusEvent) => commit(),
    onKeyDown,
  };
  if (template.type === 'text') return <textarea rows={3} maxLength={10_000} {...common} />;
  if (template.type === 'score')
    return (
      <input
        type="number"
        min={template.min ?? undefined}
        max={template.max ?? undefined}
        step="any"
        {...common}
      />
    );
  return <input placeholder="comma, separated, tags" {...common} />;
}

/** Choices as toggle buttons: thumbs, stars, and the options of a categorical template. */
function Choices({
  template,
  value,
  onSet,
  onClear,
}: Pick<FieldProps, 'template' | 'value' | 'onSet' | 'onClear'>) {
  const choice = (key: string, label: string, pressed: boolean, set: () => void) => (
    <button
      key={key}
      type="button"
      className={pressed ? 'button small active' : 'button small'}
      aria-pressed={pressed}
      onClick={set}
    >
      {label}
    </button>
  );
  if (template.type === 'thumbs')
    return (
      <div className="choices">
        {choice('up', '▲ Up (y)', value === true, () => onSet(true))}
        {choice('down', '▼ Down (n)', value === false, () => onSet(false))}
      </div>
    );
  if (template.type === 'stars') {
    const stars = typeof value === 'number' ? value : 0;
    return (
      <div className="choices stars">
        {[1, 2, 3, 4, 5].map((n) => (
          <button
            key={n}
            type="button"
            className={n <= stars ? 'star filled' : 'star'}
            aria-pressed={value === n}
            aria-label={`${n} star${n > 1 ? 's' : ''}`}
            title={`${n} (key ${n})`}
            onClick={() => onSet(n)}
          >
            {n <= stars ? '★' : '☆'}
          </button>
        ))}
      </div>
    );
  }
  const options = template.options ?? [];
  const chosen = template.multiple ? (Array.isArray(value) ? (value as string[]) : []) : [value];
  return (
    <div className="choices">
      {options.map((o, i) =>
        choice(o, i < 9 ? `${i + 1} ${o}` : o, chosen.includes(o), () => {
          if (!template.multiple) return onSet(o);
          const next = chosen.includes(o) ? chosen.filter((c) => c !== o) : [...chosen, o];
          return next.length ? onSet(next) : onClear();
        }),
      )}
    </div>
  );
}

/**
 * One template of the queue as a form field of its type. The active one (outlined) takes the digit
 * and y / n keys; a change saves at once.
 */
export function AnnotationField(props: FieldProps) {
  const { template, value, active, state } = props;
  const typed = template.type === 'score' || template.type === 'text' || template.type === 'tags';
  return (
    // biome-ignore lint/a11y/useKeyWithClickEvents: the page's keyboard moves the active field (↑ / ↓)
    <fieldset
      className={active ? 'annotation-field active' : 'annotation-field'}
      aria-current={active ? 'true' : undefined}
      onClick={props.onActivate}
      data-template={template.id}
    >
      <legend>
        {template.name} <span className="muted small">{template.type}</span>
      </legend>
      {template.description && <p className="muted small">{template.description}</p>}
      {typed ? <TypedInput {...props} /> : <Choices {...props} />}
      <div className="field-foot">
        <kbd className="hint">{keyHint(template)}</kbd>
        {template.type === 'score' && (
          <span className="muted small">
            {template.min} to {template.max}
          </span>
        )}
        <span className="spacer" />
        <span className="save-state" aria-live="polite">
          {state?.kind === 'saving' ? 'Saving…' : state?.kind === 'saved' ? 'Saved' : ''}
        </span>
        {value !== undefined && (
          <button type="button" className="link-button small" onClick={props.onClear}>
            Clear
          </button>
        )}
      </div>
      {state?.kind === 'error' && (
        <p className="form-error" role="alert">
          {state.message}
        </p>
      )}
    </fieldset>
  );
}
