import type { EventRecord } from '../../src/store/eventStore.js';

/** An allowed customer.create event with no facts, in environment test; `over` sets the rest. */
export const bareEvent = (telemetryId: string, over: Partial<EventRecord>): EventRecord => ({
  telemetryId,
  environment: 'test',
  source: 'evaluate',
  createdAt: 0,
  operationKey: 'customer.create',
  actorId: 'a',
  resourceType: 'customer',
  resourceId: 'c',
  decision: 'allow',
  score: 10,
  riskBand: 'low',
  reasons: ['low_risk_operation'],
  policyId: null,
  policyVersionId: null,
  requestSummary: {},
  explanation: { signals: [], rules: [] },
  ...over,
});
