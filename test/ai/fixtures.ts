// Shared inputs for the AI advisory tests.
import { resolveAiSettings } from '../../src/ai/settings.js';
import type { AdvisoryInput, AiSettings } from '../../src/ai/types.js';

export const ACTOR_ID = 'user_8842_secret_actor';
export const RESOURCE_ID = 'inv_2025_000917';
export const IP = '203.0.113.77';
export const UA = 'Mozilla/5.0 (X11; Linux x86_64) FakeBrowser/1.0';
export const NOTES = 'customer called support about card 4111';
export const PROOF = 'proof_tok_abcdef123456';

/**
 * Enabled settings with a roomy budget: tests that expect an answer must not turn into timeouts on
 * a loaded CI machine. Timeout tests set their own small timeoutMs.
 */
export function settings(overrides: Partial<AiSettings> = {}): AiSettings {
  return { ...resolveAiSettings({ enabled: true }), timeoutMs: 5000, ...overrides };
}

/** An export evaluation as the pipeline would hold it, carrying the things that must never leak. */
export function exportInput(): AdvisoryInput {
  const input = {
    operation: { key: 'invoice.export', sensitivity: 'high', actionType: 'export', resourceType: 'invoice' },
    signals: [
      { name: 'bulk_or_export_volume', value: 0.8 },
      { name: 'weak_session_continuity', value: 0.35 },
    ],
    score: 48,
    band: 'medium' as const,
    actor: { id: ACTOR_ID, roles: ['finance'] },
    resource: { id: RESOURCE_ID, type: 'invoice', ownerId: 'owner_1' },
    metadata: {
      requestedCount: 500,
      resourceCount: 500,
      velocityWindowCount: 3,
      changedFields: [],
      notes: NOTES,
      proofToken: PROOF,
    },
    session: { ipAddress: IP, userAgent: UA, sessionId: 'sess_1' },
    requestData: { requestedCount: 500, fields: ['customer.email', 'amount'], format: 'csv', amount: 1200, accessToken: 'tok_zzz' },
  };
  return input;
}
