/**
 * Prompt templates without I/O: the text of a version (a string or chat messages), what changed
 * from one version to the next, and the variables one rendering input gives (rendering itself is
 * domain/templates.ts, the one renderer). No Node built-ins: the console shows its diffs with it.
 */
import { diffLines } from 'diff';

export interface ChatMessage {
  role: string;
  content: string;
  [key: string]: unknown;
}

export type TemplateContent = string | ChatMessage[];

/** Model settings (the hosted PromptRunSettings); `model_alias` names the model. */
export type PromptSettings = Record<string, unknown>;

export interface VersionChanges {
  content_changed: boolean;
  settings_changed: boolean;
  model_changed: boolean;
  lines_added: number;
  lines_edited: number;
  lines_removed: number;
}

/** The lines a version's content is compared by: a chat message is `role: content`. */
export function contentText(content: TemplateContent): string {
  if (typeof content === 'string') return content;
  return content.map((m) => `${m.role}: ${m.content}`).join('\n');
}

/** One line of a side-by-side diff: unchanged, added, removed, or changed in place. */
export interface DiffRow {
  kind: 'same' | 'added' | 'removed' | 'edited';
  before: string | null;
  after: string | null;
}

/**
 * The lines of `before` and `after` side by side. Removed lines followed by added ones pair up as
 * lines edited in place (as a reviewer reads them); the rest are added or removed.
 */
export function lineDiff(before: string, after: string): DiffRow[] {
  const rows: DiffRow[] = [];
  let removed: string[] = [];
  const settle = (added: string[]) => {
    for (let i = 0; i < Math.max(removed.length, added.length); i++) {
      const b = removed[i] ?? null;
      const a = added[i] ?? null;
      rows.push({
        kind: b !== null && a !== null ? 'edited' : b !== null ? 'removed' : 'added',
        before: b,
        after: a,
      });
    }
    removed = [];
  };
  for (const part of diffLines(withNewline(before), withNewline(after))) {
    const lines = part.value.split('\n').slice(0, -1);
    if (part.removed) removed.push(...lines);
    else if (part.added) settle(lines);
    else {
      settle([]);
      for (const line of lines) rows.push({ kind: 'same', before: line, after: line });
    }
  }
  settle([]);
  return rows;
}

/** Every line ends with a newline, so a changed last line is not also counted as added. */
const withNewline = (text: string) => (text === '' || text.endsWith('\n') ? text : `${text}\n`);

/** JSON with object keys sorted: equal texts for equal values whatever the key order. */
const canonical = (value: unknown) =>
  JSON.stringify(value ?? null, (_k, v) =>
    v && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : v,
  );

/** What changed from `before` to `after` (the first version: nothing). */
export function versionChanges(
  before: { content: TemplateContent; settings: PromptSettings } | null,
  after: { content: TemplateContent; settings: PromptSettings },
): VersionChanges {
  const changes: VersionChanges = {
    content_changed: false,
    settings_changed: false,
    model_changed: false,
    lines_added: 0,
    lines_edited: 0,
    lines_removed: 0,
  };
  if (!before) return changes;
  const { model_alias: modelBefore, ...settingsBefore } = before.settings;
  const { model_alias: modelAfter, ...settingsAfter } = after.settings;
  changes.model_changed = (modelBefore ?? null) !== (modelAfter ?? null);
  changes.settings_changed = canonical(settingsBefore) !== canonical(settingsAfter);
  changes.content_changed = canonical(before.content) !== canonical(after.content);
  for (const row of lineDiff(contentText(before.content), contentText(after.content))) {
    if (row.kind !== 'same') changes[`lines_${row.kind}`]++;
  }
  return changes;
}

/** The object a JSON text holds, or null when it holds something else or is not JSON. */
function jsonObject(text: string): Record<string, unknown> | null {
  try {
    const parsed = JSON.parse(text);
    return isObject(parsed) ? parsed : null;
  } catch {
    return null;
  }
}

const isObject = (v: unknown): v is Record<string, unknown> =>
  v !== null && typeof v === 'object' && !Array.isArray(v);

/** The variables one input string renders with: a JSON object's keys, or else the text as `input`. */
export function variablesOfInput(input: string): Record<string, unknown> {
  return jsonObject(input) ?? { input };
}

/**
 * The variables one dataset row renders with: its columns (`{{input}}`, `{{output}}`, ...) and, as
 * the hosted service does, the keys of its `input` at the top level (`{{topic}}`) when the input is
 * an object or the JSON text of one (then `{{input.topic}}` works too).
 */
export function variablesOfRow(values: Record<string, unknown>): Record<string, unknown> {
  const input = typeof values.input === 'string' ? (jsonObject(values.input) ?? values.input) : values.input;
  return { ...values, input, ...(isObject(input) ? input : {}) };
}

/** One warning naming each variable that had no value, or null. */
export function missingWarning(missing: string[]): string | null {
  if (missing.length === 0) return null;
  return missing.map((m) => `Variable '${m}' has no value`).join('; ');
}
