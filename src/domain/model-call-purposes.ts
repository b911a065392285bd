/** Why Spanbase called a model: every recorded call says which feature spent it. */
export const CALL_PURPOSES = ['scorer', 'experiment', 'signals', 'playground', 'status'] as const;
export type CallPurpose = (typeof CALL_PURPOSES)[number];
