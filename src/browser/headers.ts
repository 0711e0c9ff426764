// Wire names of the continuity and step-up headers, shared by the browser client that sets them
// and the server middleware that reads them. The first four are SPEC 4.3; the rest are TPS
// extensions (SPEC has no header for continuity strength, the new-device flag or a challenge proof).

export const HEADERS = {
  sessionId: 'x-svc-session-id',
  tabId: 'x-svc-tab-id',
  operationKey: 'x-svc-operation-key',
  recentHumanSignal: 'x-svc-recent-human-signal',
  /** `strength=0.85;new-device=0;signal-age=3`; signal-age in seconds, measured by the browser's own clock. */
  continuity: 'x-svc-continuity',
  proofToken: 'x-svc-proof-token',
  passkeyAssertion: 'x-svc-passkey-assertion',
  challengeId: 'x-svc-challenge-id',
} as const;
