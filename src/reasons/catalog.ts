// The reason-code catalogue: TPS's own codes and the sample configuration's, each declared once
// with its meaning. A configuration adds its own in YAML (a rule's `reason:`, a signal's reason,
// by default its name); those are validated to be snake_case, not looked up here.

export type ReasonStage = 'risk' | 'policy' | 'challenge' | 'outcome';

export interface ReasonInfo {
  stage: ReasonStage;
  description: string;
}

export const REASONS = {
  low_risk_operation: { stage: 'outcome', description: 'No risk signal or policy rule stood out; the score is in the low band.' },
  medium_risk_score: { stage: 'outcome', description: 'No single signal stood out, but the score is in the medium band.' },
  high_risk_score: { stage: 'outcome', description: 'No single signal stood out, but the score is in the high band.' },
  monitor_mode: { stage: 'outcome', description: 'The operation or its policy is in monitor mode: allow was answered; the would-be decision is in explanation.monitor.' },

  weak_session_continuity: { stage: 'risk', description: 'session.continuityStrength is 0.4 or lower (1 − strength reaches reasonAt 0.6 in rules/signals.yaml). An absent strength counts as 0.5: it adds points but not this reason.' },
  missing_recent_human_signal: { stage: 'risk', description: 'No recent pointer, keyboard or touch activity was reported, or it is old.' },
  bulk_or_export_volume: { stage: 'risk', description: 'The requested count is large enough to be a bulk action or export.' },
  privileged_write: { stage: 'risk', description: 'metadata.changedFields is non-empty: the action writes fields.' },
  high_sensitivity_operation: { stage: 'risk', description: 'The protected operation is configured with high or critical sensitivity.' },
  new_device: { stage: 'risk', description: 'The browser or device looks new for this publishable key.' },
  geo_changed: { stage: 'risk', description: 'The caller detected a change of geography.' },
  network_changed: { stage: 'risk', description: 'The caller detected a change of network.' },
  unauthenticated_actor: { stage: 'risk', description: 'The caller reports the actor as not signed in.' },
  abnormal_sequence: { stage: 'risk', description: 'The caller detected an unusual workflow sequence.' },
  rare_object_access: { stage: 'risk', description: 'The actor rarely accesses this resource or class.' },
  suspicious_time_window: { stage: 'risk', description: 'The caller considers the time window suspicious.' },
  late_night_activity: { stage: 'risk', description: 'metadata.localHour falls in the late-night window.' },
  high_velocity: { stage: 'risk', description: 'The caller counted many similar actions in its velocity window.' },
  long_session: { stage: 'risk', description: 'The actor session is old.' },
  sensitive_resource: { stage: 'risk', description: 'resource.classification is PII, restricted or critical.' },
  automation_suspected: { stage: 'risk', description: 'rawSignals.botScore (a caller-side automation score, 0..1) is high.' },

  policy_role_required: { stage: 'policy', description: 'The actor holds none of the roles the policy requires (checked against actor.role and actor.roles).' },
  policy_recent_human_signal_required: { stage: 'policy', description: 'The policy requires a human signal no older than its maximum age.' },
  policy_redaction_applied: { stage: 'policy', description: 'The policy redacts fields before data is returned.' },
  velocity_limit_exceeded: { stage: 'policy', description: 'metadata.velocityWindowCount is above the policy limit.' },
  service_velocity_limit_exceeded: { stage: 'policy', description: "TPS's own sliding-window count for this actor and operation is above the policy limit." },
  score_step_up_threshold: { stage: 'policy', description: "The score reached the policy's step-up threshold." },
  large_payment_amount: { stage: 'policy', description: 'Sample payments policy: requestData.amount is at or above the step-up amount.' },
  export_volume_limit: { stage: 'policy', description: 'Sample finance-export policy: the export asks for more records than may ever leave at once.' },
  bulk_pii_read: { stage: 'policy', description: 'Sample pii-read policy: many customer records are read at once.' },
  score_deny_threshold: { stage: 'policy', description: "The score reached the policy's deny threshold." },
  policy_error: { stage: 'policy', description: 'A custom rule failed while it ran (an error of TPS or json-rules-engine, not of the request): it counts as a deny, and the rule is logged by name.' },

  challenge_satisfied: { stage: 'challenge', description: 'The retry carried a passed challenge bound to this transaction; the step-up is satisfied.' },
  challenge_failed: { stage: 'challenge', description: 'The retry reported a failed challenge (challengeResult.passed false).' },
  challenge_invalid: { stage: 'challenge', description: 'The retry named a challenge that was used, expired, of another type or never issued for this transaction; a fresh challenge is issued.' },
} as const satisfies Record<string, ReasonInfo>;

export type ReasonCode = keyof typeof REASONS;

export function isKnownReason(code: string): code is ReasonCode {
  return Object.prototype.hasOwnProperty.call(REASONS, code);
}

export const REASON_CODE_PATTERN = /^[a-z][a-z0-9_]{1,63}$/;
