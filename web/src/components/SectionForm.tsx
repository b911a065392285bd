import { type FormEvent, useId, useState } from 'react';
import type { Section } from '../lib/api-types.ts';
import { FieldErrors } from '../lib/field-errors.ts';
import { FieldError, FormErrors, invalidProps } from './FieldError.tsx';

/** Colours a section may take (the API keeps any text up to 64 characters; these read well). */
export const SECTION_COLOURS: [string, string][] = [
  ['', 'None'],
  ['#2563eb', 'Blue'],
  ['#059669', 'Green'],
  ['#d97706', 'Amber'],
  ['#dc2626', 'Red'],
  ['#7c3aed', 'Violet'],
  ['#475569', 'Slate'],
];

const FIELDS = ['name', 'color'];

/** Add or edit a section: name and colour. */
export function SectionForm({
  section,
  save,
  close,
}: {
  section: Section | null;
  save: (body: { name: string; color: string | null }) => Promise<void>;
  close: () => void;
}) {
  const id = useId();
  const [errors, setErrors] = useState(FieldErrors.none);
  const submit = async (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    const f = new FormData(e.currentTarget);
    try {
      await save({ name: String(f.get('name') ?? ''), color: String(f.get('color') ?? '') || null });
      close();
    } catch (err) {
      setErrors(FieldErrors.of(err, FIELDS));
    }
  };
  const known = SECTION_COLOURS.some(([v]) => v === (section?.color ?? ''));
  return (
    <form
      className="section-form"
      onSubmit={submit}
      aria-label={section ? `Edit section ${section.name}` : 'New section'}
    >
      <label className="field">
        <span>Section name</span>
        <input
          name="name"
          defaultValue={section?.name ?? ''}
          maxLength={255}
          {...invalidProps(errors, 'name', `${id}-name`)}
        />
        <FieldError errors={errors} field="name" id={`${id}-name`} />
      </label>
      <label className="field">
        <span>Colour</span>
        <select
          name="color"
          defaultValue={section?.color ?? ''}
          {...invalidProps(errors, 'color', `${id}-color`)}
        >
          {!known && section?.color && <option value={section.color}>{section.color}</option>}
          {SECTION_COLOURS.map(([v, l]) => (
            <option key={v} value={v}>
              {l}
            </option>
          ))}
        </select>
        <FieldError errors={errors} field="color" id={`${id}-color`} />
      </label>
      <FormErrors errors={errors} />
      <div className="form-actions">
        <button type="submit" className="button primary">
          {section ? 'Save section' : 'Add section'}
        </button>
        <button type="button" className="button ghost" onClick={close}>
          Cancel
        </button>
      </div>
    </form>
  );
}
