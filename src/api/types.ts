// The public API's shapes, mirroring SPEC §2 table by table. Server, clients and tests import
// these; nothing else declares them.

export const DECISIONS = ['allow', 'allow_redacted', 'step_up_required', 'throttle', 'deny'] as const;
export type Decision = (typeof DECISIONS)[number];

export const CHALLENGE_TYPES = ['passkey', 'proof_token'] as const;
export type ChallengeType = (typeof CHALLENGE_TYPES)[number];

export const REDACTION_STRATEGIES = ['mask', 'drop'] as const;
export type RedactionStrategy = (typeof REDACTION_STRATEGIES)[number];

export const RISK_BANDS = ['low', 'medium', 'high'] as const;
export type RiskBand = (typeof RISK_BANDS)[number];

export const EVENT_SOURCES = ['evaluate', 'ingest'] as const;
export type EventSource = (typeof EVENT_SOURCES)[number];

export const AI_STATUSES = ['applied', 'skipped', 'timeout', 'error', 'invalid_output'] as const;
export type AiStatus = (typeof AI_STATUSES)[number];

/** SPEC 2.1 actor. */
export interface Actor {
  id: string;
  authenticated?: boolean;
  role?: string;
  roles?: string[];
  trusted?: boolean;
  sessionAgeMinutes?: number;
}

/** SPEC 2.1 resource. */
export interface Resource {
  type: string;
  id: string;
  ownerId?: string;
  classification?: string;
}

/** SPEC 2.1 requestData: requestedCount plus any other security-relevant keys. */
export interface RequestData {
  requestedCount?: number;
  fields?: string[];
  amount?: number;
  currency?: string;
  [key: string]: unknown;
}

/** SPEC 2.1 session: continuity context, usually produced by the browser client. */
export interface SessionContext {
  sessionId?: string;
  tabId?: string;
  isNewDevice?: boolean;
  continuityStrength?: number;
  recentHumanSignalAt?: string;
  recentHumanSignalAgeSeconds?: number;
  geoChanged?: boolean;
  networkChanged?: boolean;
  ipAddress?: string;
  userAgent?: string;
}

/** SPEC 2.1 metadata: normalized risk metadata. */
export interface Metadata {
  requestedCount?: number;
  velocityWindowCount?: number;
  changedFields?: string[];
  resourceCount?: number;
  abnormalSequence?: boolean;
  objectAccessRare?: boolean;
  suspiciousTimeWindow?: boolean;
  localHour?: number;
  proofToken?: string;
  notes?: string;
}

/** SPEC 2.1 challengeResult; challengeId is CONTRACT's optional explicit binding. */
export interface ChallengeResult {
  type?: ChallengeType;
  passed?: boolean;
  challengeId?: string;
}

/** SPEC 2.1: the evaluate request. */
export interface EvaluateRequest {
  operationKey: string;
  actor: Actor;
  resource: Resource;
  requestData?: RequestData;
  session?: SessionContext;
  metadata?: Metadata;
  challengeResult?: ChallengeResult;
  rawSignals?: Record<string, boolean | number>;
}

export interface Challenge {
  type: ChallengeType;
  id: string;
  expiresAt?: string;
}

export interface Redaction {
  fields: string[];
  strategy: RedactionStrategy;
}

export interface AiAssessment {
  status: AiStatus;
  scoreDelta: number;
  model?: string;
  rationale?: string;
  labels?: string[];
  latencyMs?: number;
}

/** SPEC 2.2: the evaluate response. */
export interface EvaluateResponse {
  decision: Decision;
  score: number;
  riskBand: RiskBand;
  reasons: string[];
  telemetryId: string;
  challenge?: Challenge;
  redaction?: Redaction;
  policyVersionId?: string;
  aiAssessment?: AiAssessment;
  retryAfterSeconds?: number;
  operationKey: string;
  operationDisplayName: string;
  actionType: string;
  resourceType: string;
  sensitivity: string;
  policyId: string;
  warnings: string[];
}

/** SPEC 2.3: a decision the caller already made, recorded as evidence. */
export interface IngestRecord {
  operationKey: string;
  actorId: string;
  resourceType: string;
  resourceId: string;
  telemetryId: string;
  requestSummary: Record<string, unknown>;
  decision: Decision;
  score: number;
  reasons: string[];
  normalizedSignals: Record<string, number>;
}

export interface IngestResponse {
  telemetryId: string;
  stored: boolean;
  duplicate?: boolean;
}

/** CONTRACT "Errors": the body of every non-2xx answer. */
export interface ErrorDetail {
  path: string;
  message: string;
}

export interface ErrorBody {
  error: { code: string; message: string; details?: ErrorDetail[] };
}

export const ERROR_CODES = [
  'invalid_json',
  'invalid_request',
  'missing_api_key',
  'invalid_api_key',
  'publishable_key_not_allowed',
  'not_found',
  'telemetry_id_conflict',
  'payload_too_large',
  'unsupported_media_type',
  'unknown_operation',
  'rate_limited',
  'store_unavailable',
  'evaluation_unavailable',
  'state_unavailable',
  'internal_error',
] as const;
export type ErrorCode = (typeof ERROR_CODES)[number];

/** One signal's share of the score, as recorded in an event's explanation. */
export interface SignalContribution {
  name: string;
  value: number;
  weight: number;
  contribution: number;
  reason?: string;
}

/** A rule of the compiled policy and whether it fired for this evaluation. */
export interface RuleOutcome {
  name: string;
  fired: boolean;
  decision: Decision;
  reason: string;
}

/** What a policy in monitor mode would have decided (the caller was answered allow). */
export interface MonitoredOutcome {
  decision: Decision;
  reasons: string[];
  challengeType?: ChallengeType;
  redaction?: Redaction;
  retryAfterSeconds?: number;
}

/** A stored decision event as the Decision Logs return it. */
export interface DecisionEvent {
  telemetryId: string;
  environment: string;
  source: EventSource;
  createdAt: string;
  operationKey: string;
  actorId: string;
  resourceType: string;
  resourceId: string;
  decision: Decision;
  score: number;
  riskBand: RiskBand | null;
  reasons: string[];
  policyId: string | null;
  policyVersionId: string | null;
  requestSummary: Record<string, unknown>;
  explanation: Explanation;
}

/**
 * An event whose stored explanation this TPS cannot decode (written by a newer version during a
 * rolling upgrade, or a damaged row), as the Decision Logs, the stream and `tps events export` give
 * it: `explanation` null, `explanationUnreadable` true, every other field as stored.
 */
export type UnreadableDecisionEvent = Omit<DecisionEvent, 'explanation'> & { explanation: null; explanationUnreadable: true };

/** An event as the Decision Logs, the stream and export give it. */
export type LoggedEvent = DecisionEvent | UnreadableDecisionEvent;

export interface Explanation {
  signals: SignalContribution[];
  rules: RuleOutcome[];
  thresholds?: { medium: number; high: number; stepUp?: number; deny?: number };
  challenge?: Challenge & { outcome: string };
  redaction?: Redaction;
  retryAfterSeconds?: number;
  /** What the retry's challengeResult amounted to: satisfied, failed or invalid. */
  challengeResult?: string;
  /** The score of the signals alone, before any AI advisory adjustment. */
  baseScore?: number;
  aiAssessment?: AiAssessment;
  /** The normalized inputs needed to re-decide this event (replay). */
  facts?: Record<string, unknown>;
  /** Monitor mode: the service answered allow; this is what the policy would have decided. */
  monitor?: MonitoredOutcome;
  normalizedSignals?: Record<string, number>;
}

/** CONTRACT "Decision Logs": query filters of GET /api/events and GET /api/events/stream. */
export interface EventFilters {
  operationKey?: string;
  actorId?: string;
  resourceType?: string;
  resourceId?: string;
  decision?: Decision;
  riskBand?: RiskBand;
  source?: EventSource;
  reason?: string;
  /** ISO 8601. */
  from?: string;
  /** ISO 8601. */
  to?: string;
  /** Default 50, at most 500. */
  limit?: number;
  cursor?: string;
}

/** CONTRACT "Decision Logs": the answer of GET /api/events. */
export interface EventPage {
  events: LoggedEvent[];
  nextCursor: string | null;
}
