/** Alert rules: comparisons, and when an evaluation fires or recovers a rule. */

export const COMPARISONS = ['gt', 'gte', 'lt', 'lte'] as const;
export type Comparison = (typeof COMPARISONS)[number];
export const MAX_WINDOW_MINUTES = 1440;

/** Whether the rule's condition holds for a value (no value, no records: it does not hold). */
export function holds(value: number | null, comparison: Comparison, threshold: number): boolean {
  if (value === null || !Number.isFinite(value)) return false;
  switch (comparison) {
    case 'gt':
      return value > threshold;
    case 'gte':
      return value >= threshold;
    case 'lt':
      return value < threshold;
    case 'lte':
      return value <= threshold;
  }
}

/** The state change an evaluation makes: fires when it starts holding, recovers when it stops. */
export function transition(state: string, holding: boolean): 'fired' | 'recovered' | null {
  if (holding && state !== 'firing') return 'fired';
  if (!holding && state === 'firing') return 'recovered';
  return null;
}
