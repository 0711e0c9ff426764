import crypto from 'node:crypto';
import type { RuleProperties } from 'json-rules-engine';
import { stringify } from 'safe-stable-stringify';
import type { ChallengeType, Decision, Redaction } from '../api/types.js';
import { compileSignal, type CompiledSignal } from '../risk/signals.js';
import { factsOf, leaf, toTopLevel } from './conditions.js';
import { directCheck, type DirectCheck } from './direct.js';
import { PolicyEngines } from './engines.js';
import { DEFAULT_THRESHOLDS, type AiSpec, type ConditionSpec, type Mode, type PolicySpec, type SignalSpec } from './schema.js';

export interface Thresholds {
  medium: number;
  high: number;
  stepUp?: number;
  deny?: number;
}

/** One rule of a compiled policy: what it decides when its conditions hold. */
export interface CompiledRule {
  name: string;
  decision: Decision;
  reason: string;
  challenge?: ChallengeType;
  redaction?: Redaction;
  retryAfterSeconds?: number;
  /** Built in by a policy shorthand (requireRoles, thresholds…) rather than written under rules:. */
  builtIn: boolean;
  conditions: ReturnType<typeof toTopLevel>;
  /**
   * A shorthand's `conditions` as a check that runPolicy makes directly (direct.ts), with the
   * engine's meaning: a comparison is not rule-shaped, and the engine's fixed and per-rule costs (it
   * deep-clones each rule's conditions on every run) were most of a run for policies with few rules.
   * Rules written under rules: have none and run in the engine.
   */
  check?: DirectCheck;
}

/** A policy as it runs: built once per configuration version, shared by every request. */
export interface CompiledPolicy {
  id: string;
  versionId: string;
  description?: string;
  thresholds: Thresholds;
  signals: CompiledSignal[];
  rules: CompiledRule[];
  stepUpChallenge: ChallengeType;
  serviceWindow?: { seconds: number; max: number };
  ai?: AiSpec;
  /** monitor: the service answers allow and records what this policy would have decided. */
  mode: Mode;
  /** The engines of the rules written under rules:, one a run in flight; null when there are none. */
  engines: PolicyEngines | null;
  /** The facts the engine's rules read: only those are handed to a run. */
  engineFacts: string[];
  /** The JSON that the version id hashes: what a reviewer reads, what policy_versions keeps. */
  compiled: Record<string, unknown>;
}

export const DEFAULT_THROTTLE_RETRY_SECONDS = 60;

/** The names of the rules the policy shorthands build: a rule under rules: may not take one (catalog.ts). */
export const BUILT_IN_RULE_NAMES = ['require-roles', 'require-recent-human-signal', 'caller-velocity-limit', 'service-velocity-limit', 'score-deny', 'score-step-up'] as const;

function builtInRules(spec: PolicySpec, stepUpChallenge: ChallengeType, thresholds: Thresholds): CompiledRule[] {
  const rules: CompiledRule[] = [];
  const add = (name: (typeof BUILT_IN_RULE_NAMES)[number], decision: Decision, reason: string, when: ConditionSpec, extra: Partial<CompiledRule> = {}) =>
    rules.push({ name, decision, reason, builtIn: true, conditions: toTopLevel(when), check: directCheck(when), ...extra });

  if (spec.requireRoles) {
    add('require-roles', 'deny', 'policy_role_required', leaf('actor.roles', 'not:someFact:in', spec.requireRoles));
  }
  const human = spec.requireRecentHumanSignal;
  if (human) {
    const action = human.action ?? 'step_up';
    add(
      'require-recent-human-signal',
      action === 'deny' ? 'deny' : 'step_up_required',
      'policy_recent_human_signal_required',
      { any: [leaf('session.humanSignalAgeSeconds', 'exists', false), leaf('session.humanSignalAgeSeconds', 'greaterThan', human.maxAgeSeconds)] },
      action === 'deny' ? {} : { challenge: stepUpChallenge },
    );
  }
  const retryAfterSeconds = spec.throttle?.retryAfterSeconds ?? DEFAULT_THROTTLE_RETRY_SECONDS;
  if (spec.throttle?.velocityWindowCount !== undefined) {
    add('caller-velocity-limit', 'throttle', 'velocity_limit_exceeded', leaf('metadata.velocityWindowCount', 'greaterThan', spec.throttle.velocityWindowCount), { retryAfterSeconds });
  }
  if (spec.throttle?.serviceWindow) {
    add('service-velocity-limit', 'throttle', 'service_velocity_limit_exceeded', leaf('velocity.serviceCount', 'greaterThan', spec.throttle.serviceWindow.max), {
      retryAfterSeconds: Math.min(retryAfterSeconds, spec.throttle.serviceWindow.seconds),
    });
  }
  if (thresholds.deny !== undefined) add('score-deny', 'deny', 'score_deny_threshold', leaf('risk.score', 'greaterThanInclusive', thresholds.deny));
  if (thresholds.stepUp !== undefined) {
    add('score-step-up', 'step_up_required', 'score_step_up_threshold', leaf('risk.score', 'greaterThanInclusive', thresholds.stepUp), {
      challenge: stepUpChallenge,
    });
  }
  return rules;
}

export function compilePolicy(spec: PolicySpec, signalSpecs: Record<string, SignalSpec>): CompiledPolicy {
  const thresholds: Thresholds = { ...DEFAULT_THRESHOLDS, ...stripUndefined(spec.thresholds ?? {}) };
  const stepUpChallenge = (spec.stepUp?.challenge ?? 'passkey') as ChallengeType;
  // Own keys only: a signal may be called "constructor", which every object inherits.
  const weights = new Map(Object.entries((spec.weights ?? {}) as Record<string, number>));
  const signals = Object.entries(signalSpecs).map(([name, s]) => compileSignal(name, s, weights.get(name) ?? s.weight));

  const rules = builtInRules(spec, stepUpChallenge, thresholds);
  for (const r of spec.rules ?? []) {
    rules.push({
      name: r.name,
      decision: r.then.decision as Decision,
      reason: r.then.reason,
      builtIn: false,
      conditions: toTopLevel(r.when as ConditionSpec | undefined),
      ...(r.then.decision === 'step_up_required' ? { challenge: (r.then.challenge ?? stepUpChallenge) as ChallengeType } : {}),
      ...(r.then.redaction ? { redaction: r.then.redaction as Redaction } : {}),
      ...(r.then.decision === 'throttle' ? { retryAfterSeconds: r.then.retryAfterSeconds ?? spec.throttle?.retryAfterSeconds ?? DEFAULT_THROTTLE_RETRY_SECONDS } : {}),
    });
  }

  const compiled = {
    id: spec.id,
    thresholds,
    stepUpChallenge,
    serviceWindow: spec.throttle?.serviceWindow ?? null,
    signals: signals.map((s) => ({ ...s.spec, name: s.name, weight: s.weight, reason: s.reason, reasonAt: s.reasonAt, description: undefined })),
    rules: rules.map((r, index) => toEngineRule(r, index)),
    ai: spec.ai ?? null,
    // Only when set, so that adding the field left every existing policy version id unchanged.
    ...(spec.mode === 'monitor' ? { mode: 'monitor' } : {}),
  };
  const versionId = `pv_${crypto.createHash('sha256').update(stringify(compiled) ?? '').digest('hex').slice(0, 20)}`;

  // The engine's copy of a rule names only its index: json-rules-engine deep-clones a rule's event
  // and resolves each of its params on every run, and runPolicy reads nothing else.
  const engineRules = rules.flatMap((r, index) => (r.check ? [] : [{ conditions: r.conditions, event: { type: r.decision, params: { index } } }]));
  const engines = engineRules.length ? new PolicyEngines(engineRules) : null;
  return {
    id: spec.id,
    versionId,
    description: spec.description,
    thresholds,
    signals,
    rules,
    stepUpChallenge,
    serviceWindow: spec.throttle?.serviceWindow,
    ai: spec.ai,
    mode: (spec.mode ?? 'enforce') as Mode,
    engines,
    engineFacts: [...new Set(engineRules.flatMap((r) => factsOf(r.conditions)))],
    compiled: JSON.parse(stringify(compiled) ?? '{}'),
  };
}

function toEngineRule(rule: CompiledRule, index: number): RuleProperties {
  const { conditions, builtIn: _builtIn, check: _check, ...outcome } = rule;
  return { name: rule.name, conditions, event: { type: rule.decision, params: { index, ...outcome } } };
}

function stripUndefined<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}
