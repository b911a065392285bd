/**
 * Prompt templates without I/O: the text of a version (a string or chat messages), what changed
 * from one version to the next, and the variables one rendering input gives (rendering itself is
 * domain/templates.ts, the one renderer).
 */
import { isDeepStrictEqual } from 'node:util';
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

/**
 * What changed from `before` to `after` (the first version: nothing). A removed line followed by an
 * added one counts as one edited line, as a reviewer reads a line changed in place.
 */
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
  changes.settings_changed = !isDeepStrictEqual(settingsBefore, settingsAfter);
  changes.content_changed = !isDeepStrictEqual(before.content, after.content);
  let removed = 0;
  const settle = (added: number) => {
    const edited = Math.min(removed, added);
    changes.lines_edited += edited;
    changes.lines_removed += removed - edited;
    changes.lines_added += added - edited;
    removed = 0;
  };
  for (const part of diffLines(
    withNewline(contentText(before.content)),
    withNewline(contentText(after.content)),
  )) {
    const n = part.count ?? 0;
    if (part.removed) removed += n;
    else if (part.added) settle(n);
    else settle(0);
  }
  settle(0);
  return changes;
}

/** Every line ends with a newline, so a changed last line is not also counted as added. */
const withNewline = (text: string) => (text === '' || text.endsWith('\n') ? text : `${text}\n`);

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
