import { useEffect, useMemo, useState } from 'react';
import { FILTER_TYPES, type FilterKind, type FilterType } from '../../../src/query/filter-kinds.ts';
import type { Column } from '../lib/api-types.ts';
import { isoToLocalInput, localInputToIso } from '../lib/format.ts';
import {
  type ConditionNode,
  type FilterTreeJson,
  type FormNode,
  type FormProblem,
  OPERATOR_LABELS,
  UnsupportedFilter,
  addNode,
  countConditions,
  formToTree,
  hasCaseOption,
  mapNode,
  newCondition,
  newId,
  operatorsOf,
  toggleNot,
  treeToForm,
  typedUnit,
  valueShape,
  withOperator,
  withType,
} from '../lib/filter-form.ts';

const TYPE_LABELS: Record<FilterType, string> = {
  text: 'text',
  id: 'id',
  number: 'number',
  date: 'date',
  boolean: 'boolean',
  collection: 'collection',
  fully_annotated: 'fully annotated',
};

interface Ctx {
  columns: Column[];
  problems: Map<string, string>;
  update: (id: string, fn: (n: FormNode) => FormNode | null) => void;
  add: (groupId: string | null, node: FormNode) => void;
  firstColumn: () => ConditionNode;
}

function ValueInputs({ c, ctx }: { c: ConditionNode; ctx: Ctx }) {
  const set = (values: string[]) => ctx.update(c.id, (n) => ({ ...(n as ConditionNode), values }));
  const shape = valueShape(c.type, c.operator);
  if (shape === 'boolean') {
    return (
      <select aria-label="Value" value={c.values[0]} onChange={(e) => set([e.currentTarget.value])}>
        <option value="true">true</option>
        <option value="false">false</option>
      </select>
    );
  }
  if (shape === 'list') {
    const label =
      c.type === 'fully_annotated' ? 'User ids (one per line; none: any annotator)' : 'Values (one per line)';
    return (
      <textarea
        aria-label={label}
        placeholder={label}
        rows={2}
        value={c.values.join('\n')}
        onChange={(e) => set(e.currentTarget.value.split('\n'))}
        onBlur={(e) => set(e.currentTarget.value.split('\n').filter((v) => v !== ''))}
      />
    );
  }
  const one = (value: string, label: string, onChange: (v: string) => void) =>
    c.type === 'date' ? (
      <input
        aria-label={label}
        type="datetime-local"
        value={isoToLocalInput(value)}
        onChange={(e) => onChange(localInputToIso(e.currentTarget.value) ?? '')}
      />
    ) : (
      <input
        aria-label={typedUnit(c.column) ? `${label} (${typedUnit(c.column)})` : label}
        placeholder={c.type === 'number' ? (typedUnit(c.column) ?? 'number') : 'value'}
        inputMode={c.type === 'number' ? 'decimal' : undefined}
        value={value}
        onChange={(e) => onChange(e.currentTarget.value)}
      />
    );
  if (shape === 'pair') {
    return (
      <span className="pair">
        {one(c.values[0], 'Low value', (v) => set([v, c.values[1]]))}
        <span aria-hidden="true">and</span>
        {one(c.values[1], 'High value', (v) => set([c.values[0], v]))}
      </span>
    );
  }
  return one(c.values[0], 'Value', (v) => set([v]));
}

function ConditionRow({ c, ctx }: { c: ConditionNode; ctx: Ctx }) {
  const set = (next: ConditionNode) => ctx.update(c.id, () => next);
  const groups = useMemo(() => {
    const m = new Map<string, Column[]>();
    for (const col of ctx.columns) m.set(col.group_label, [...(m.get(col.group_label) ?? []), col]);
    return m;
  }, [ctx.columns]);
  const known = ctx.columns.some((col) => col.id === c.column);
  const problem = ctx.problems.get(c.id);
  return (
    <div className={problem ? 'condition invalid' : 'condition'}>
      {c.type !== 'fully_annotated' && (
        <select
          aria-label="Column"
          value={c.column}
          onChange={(e) => {
            const id = e.currentTarget.value;
            const col = ctx.columns.find((x) => x.id === id);
            set(withType({ ...c, column: id }, (col?.filter_type as FilterKind) ?? c.type));
          }}
        >
          {!known && <option value={c.column}>{c.column || 'Choose a column'}</option>}
          {[...groups].map(([group, cols]) => (
            <optgroup key={group} label={group}>
              {cols.map((col) => (
                <option key={col.id} value={col.id}>
                  {col.label}
                </option>
              ))}
            </optgroup>
          ))}
        </select>
      )}
      <select
        aria-label="Filter kind"
        value={c.type}
        onChange={(e) => {
          const type = e.currentTarget.value as FilterType;
          const next = withType(c, type);
          set(
            type !== 'fully_annotated' && !next.column ? { ...next, column: ctx.firstColumn().column } : next,
          );
        }}
      >
        {/* "fully annotated" is about an annotation queue's records: the API refuses it elsewhere. */}
        {FILTER_TYPES.filter((t) => t !== 'fully_annotated' || c.type === t).map((t) => (
          <option key={t} value={t}>
            {TYPE_LABELS[t]}
          </option>
        ))}
      </select>
      {c.type !== 'fully_annotated' && (
        <select
          aria-label="Operator"
          value={c.operator}
          onChange={(e) => set(withOperator(c, e.currentTarget.value))}
        >
          {operatorsOf(c.type).map((op) => (
            <option key={op} value={op}>
              {OPERATOR_LABELS[op] ?? op}
            </option>
          ))}
        </select>
      )}
      <ValueInputs c={c} ctx={ctx} />
      {hasCaseOption(c.type) && (
        <label className="check">
          <input
            type="checkbox"
            checked={c.caseSensitive}
            onChange={(e) => set({ ...c, caseSensitive: e.currentTarget.checked })}
          />
          Match case
        </label>
      )}
      <NodeActions id={c.id} ctx={ctx} />
      {problem && (
        <span className="field-problem" role="alert">
          {problem}
        </span>
      )}
    </div>
  );
}

/** Adds a condition, or an ANY group holding one, to a group (null: at the top). */
function AddButtons({ groupId, ctx }: { groupId: string | null; ctx: Ctx }) {
  return (
    <>
      <button type="button" className="button small" onClick={() => ctx.add(groupId, ctx.firstColumn())}>
        + Condition
      </button>
      <button
        type="button"
        className="button small"
        onClick={() =>
          ctx.add(groupId, { kind: 'group', id: newId(), op: 'or', children: [ctx.firstColumn()] })
        }
      >
        + Group
      </button>
    </>
  );
}

function NodeActions({ id, ctx, notLabel = 'NOT' }: { id: string; ctx: Ctx; notLabel?: string }) {
  return (
    <span className="node-actions">
      <button
        type="button"
        className="button small ghost"
        onClick={() => ctx.update(id, (n) => toggleNot(n, n.id))}
      >
        {notLabel}
      </button>
      <button
        type="button"
        className="button small ghost"
        aria-label="Remove"
        title="Remove"
        onClick={() => ctx.update(id, () => null)}
      >
        ✕
      </button>
    </span>
  );
}

function NodeView({ node, ctx }: { node: FormNode; ctx: Ctx }) {
  switch (node.kind) {
    case 'condition':
      return <ConditionRow c={node} ctx={ctx} />;
    case 'not':
      return (
        <div className="not-box">
          <div className="group-head">
            <span className="not-label">NOT</span>
            <button
              type="button"
              className="button small ghost"
              onClick={() => ctx.update(node.id, (n) => (n.kind === 'not' ? n.child : n))}
            >
              Remove NOT
            </button>
          </div>
          <NodeView node={node.child} ctx={ctx} />
        </div>
      );
    case 'group':
      return (
        <fieldset className="group">
          <legend className="visually-hidden">Group</legend>
          <div className="group-head">
            <select
              aria-label="Match"
              value={node.op}
              onChange={(e) => {
                // Read now: the event is gone by the time the state update runs.
                const op = e.currentTarget.value as 'and' | 'or';
                ctx.update(node.id, (n) => ({ ...(n as typeof node), op }));
              }}
            >
              <option value="and">ALL of (AND)</option>
              <option value="or">ANY of (OR)</option>
            </select>
            <NodeActions id={node.id} ctx={ctx} />
          </div>
          <div className="group-children">
            {node.children.map((child) => (
              <NodeView key={child.id} node={child} ctx={ctx} />
            ))}
            {node.children.length === 0 && (
              <p className="muted small">An empty group matches every record.</p>
            )}
          </div>
          <div className="group-add">
            <AddButtons groupId={node.id} ctx={ctx} />
          </div>
        </fieldset>
      );
  }
}

/**
 * The filter builder: nested AND / OR / NOT groups of conditions over the run's columns, for every
 * filter kind and operator, applied as the search's `filter_tree`. Any tree can also be edited as
 * JSON (the builder shows what it can).
 */
export function FilterBuilder({
  applied,
  columns,
  onApply,
}: {
  applied: FilterTreeJson | null;
  columns: Column[];
  onApply: (tree: FilterTreeJson | null) => void;
}) {
  const filterable = useMemo(() => columns.filter((c) => c.filterable), [columns]);
  const kindOf = (id: string) => filterable.find((c) => c.id === id)?.filter_type as FilterKind | undefined;
  const fromApplied = (): { root: FormNode | null; unsupported: string | null } => {
    if (!applied) return { root: null, unsupported: null };
    try {
      return { root: treeToForm(applied, kindOf), unsupported: null };
    } catch (err) {
      if (err instanceof UnsupportedFilter) return { root: null, unsupported: err.message };
      throw err;
    }
  };
  const [root, setRoot] = useState<FormNode | null>(() => fromApplied().root);
  const [jsonMode, setJsonMode] = useState(() => fromApplied().unsupported !== null);
  const [json, setJson] = useState(() => (applied ? JSON.stringify(applied, null, 2) : ''));
  const [problems, setProblems] = useState<FormProblem[]>([]);
  const [note, setNote] = useState<string | null>(() => fromApplied().unsupported);
  const appliedText = JSON.stringify(applied);

  // A new applied tree (back button, another link): show it.
  // biome-ignore lint/correctness/useExhaustiveDependencies: appliedText stands for applied
  useEffect(() => {
    const next = fromApplied();
    setRoot(next.root);
    setJson(applied ? JSON.stringify(applied, null, 2) : '');
    setProblems([]);
    setNote(next.unsupported);
    if (next.unsupported) setJsonMode(true);
  }, [appliedText]);

  const firstColumn = () => {
    const col = filterable.find((c) => c.id === 'name') ?? filterable[0];
    return newCondition(col?.id ?? 'name', (col?.filter_type as FilterKind) ?? 'text');
  };
  const ctx: Ctx = {
    columns: filterable,
    problems: new Map(problems.map((p) => [p.id, p.message])),
    update: (id, fn) => setRoot((r) => (r ? mapNode(r, id, fn) : r)),
    add: (groupId, node) => setRoot((r) => addNode(r, groupId, node)),
    firstColumn,
  };

  const apply = () => {
    if (jsonMode) {
      if (!json.trim()) return onApply(null);
      try {
        onApply(JSON.parse(json));
        setNote(null);
      } catch (err) {
        setNote(`The JSON does not parse: ${(err as Error).message}`);
      }
      return;
    }
    if (!root) return onApply(null);
    const out = formToTree(root);
    setProblems(out.problems);
    if (out.problems.length === 0) onApply(out.tree);
  };

  const switchMode = () => {
    if (jsonMode) {
      try {
        setRoot(json.trim() ? treeToForm(JSON.parse(json), kindOf) : null);
        setJsonMode(false);
        setNote(null);
      } catch (err) {
        setNote(`The builder cannot show this tree (${(err as Error).message}); keep editing it as JSON.`);
      }
    } else {
      setJson(root ? JSON.stringify(formToTree(root).tree, null, 2) : '');
      setJsonMode(true);
    }
  };

  return (
    <section className="filter-builder" aria-label="Filter builder">
      {jsonMode ? (
        <label className="field">
          <span>Filter tree (JSON, as the search API takes it)</span>
          <textarea className="mono" rows={8} value={json} onChange={(e) => setJson(e.currentTarget.value)} />
        </label>
      ) : root ? (
        <NodeView node={root} ctx={ctx} />
      ) : (
        <p className="muted">No filters: every record of the run matches.</p>
      )}
      {note && (
        <p className="form-error" role="alert">
          {note}
        </p>
      )}
      {problems.length > 0 && (
        <p className="form-error" role="alert">
          Fix the marked {problems.length === 1 ? 'condition' : 'conditions'} first.
        </p>
      )}
      <div className="builder-actions">
        {/* A root group has its own buttons. */}
        {!jsonMode && root?.kind !== 'group' && <AddButtons groupId={null} ctx={ctx} />}
        <span className="spacer" />
        <button type="button" className="button small ghost" onClick={switchMode}>
          {jsonMode ? 'Edit with the builder' : 'Edit as JSON'}
        </button>
        <button
          type="button"
          className="button small ghost"
          onClick={() => {
            setRoot(null);
            setJson('');
            setProblems([]);
            onApply(null);
          }}
        >
          Clear
        </button>
        <button type="button" className="button small primary" onClick={apply}>
          Apply filters
        </button>
      </div>
      <p className="muted small" aria-live="polite">
        {jsonMode
          ? 'Editing JSON'
          : `${countConditions(root)} condition${countConditions(root) === 1 ? '' : 's'}`}
      </p>
    </section>
  );
}
