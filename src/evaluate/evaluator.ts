import crypto from 'node:crypto';
import { ApiError } from '../api/errors.js';
import type { AiAssessment, EvaluateRequest, EvaluateResponse, MonitoredOutcome } from '../api/types.js';
import { decide, type ChallengeState, type Outcome } from '../decide/decide.js';
import { monitorOutcome } from '../decide/monitor.js';
import { buildFacts, requestSummary, type Facts } from '../facts/facts.js';
import { lookupOperation, type Catalog, type CompiledOperation } from '../policy/catalog.js';
import type { CompiledPolicy } from '../policy/compile.js';
import { runPolicy, type PolicyFacts, type PolicyRun } from '../policy/run.js';
import { assessRisk, bandOf, clampScore, type RiskAssessment } from '../risk/score.js';
import { surelyNotCommitted } from '../store/commitFailure.js';
import type { EventRecord } from '../store/eventStore.js';
import type { ChallengeChanges, ChallengeStore, StoredChallenge } from '../state/challenges.js';
import type { VelocityCounter } from '../state/counters.js';
import type { AdvisoryPort } from './advisory.js';
import { transactionFingerprint } from './fingerprint.js';
import type { Landed } from './landed.js';
import { newTelemetryId } from './telemetryId.js';

/**
 * An evaluation whose event could not be committed: its client is told to retry as if it never ran,
 * so the challenge it used is put back and the one it issued withdrawn first. Only when the commit
 * surely wrote nothing: one that may have landed keeps its challenge used, lest it allow twice. A
 * revert that fails too leaves them as they are: the retry is then challenged afresh, never allowed.
 * A commit that may have landed is looked up (`landed`): found, the evaluation stands and this
 * resolves, so its answer is sent; else its caller would retry into a second event for one decision.
 * Not found proves nothing (a PostgreSQL backend that has the statement may commit it just after
 * the read): that, like a failed look-up, is answered "may or may not have been recorded".
 */
export async function commitFailed(
  err: unknown,
  changes: ChallengeChanges | undefined,
  revert: (changes: ChallengeChanges) => Promise<void>,
  event: { environment: string; telemetryId: string },
  landed?: Landed,
): Promise<void> {
  if (surelyNotCommitted(err)) {
    if (changes) await revert(changes).catch(() => undefined);
    throw notStored(err);
  }
  const found = landed ? await landed(event.environment, event.telemetryId).catch(() => false) : false;
  if (!found) throw mayHaveLanded(event.telemetryId, err);
}

const notStored = (err: unknown) => ApiError.storeUnavailable('the decision could not be recorded; nothing was stored, retry the evaluation', err);

/** The commit may have landed and the store has not shown it: the caller looks it up before retrying. */
const mayHaveLanded = (telemetryId: string, err: unknown) =>
  ApiError.storeUnavailable(
    `the decision may or may not have been recorded (telemetryId ${telemetryId}); look it up (GET /api/events/${telemetryId}) before retrying`,
    err,
    [{ path: 'telemetryId', message: telemetryId }],
  );

export interface EvaluatorDeps {
  /** The configuration in force; read once per evaluation, so a reload never splits one. */
  catalog(): Catalog;
  counters: VelocityCounter;
  challenges: ChallengeStore;
  /**
   * Resolves once the event is committed. Absent where the caller commits the event it is handed
   * back (the evaluate route's runners, src/evaluate/runner.ts), so no call is made for nothing.
   */
  record?(event: EventRecord): Promise<void>;
  advisor?: AdvisoryPort;
  challengeTtlMs: number;
  now?: () => number;
}

/** Everything one evaluation produced, for the response and for the event. */
export interface Evaluation {
  response: EvaluateResponse;
  event: EventRecord;
  /** What it did to the challenges, if anything: undone if its event is not committed (commitFailed). */
  challenges?: ChallengeChanges;
}

/** What a retry's challengeResult comes to, given the challenge it used up (if any was live). */
function challengeState(req: EvaluateRequest, stored: StoredChallenge | undefined): ChallengeState {
  const result = req.challengeResult;
  if (!result || result.passed === undefined) return { kind: 'none' };
  if (!result.passed) return { kind: 'failed' };
  // Every request names the type with passed true (validate/evaluateRequest.ts); only the replay of
  // a retry stored before that rule leaves it out, meaning whichever challenge was asked.
  if (!stored || (result.type !== undefined && result.type !== stored.type)) return { kind: 'invalid' };
  return { kind: 'satisfied', score: stored.score, band: stored.band, reasons: stored.reasons };
}

/**
 * The evaluate path: facts → risk → (advisory) → policy → decide → record. Each stage is a pure
 * function of the one before; the I/O (counters, challenges, advisory, event store) happens here.
 */
export class Evaluator {
  private readonly now: () => number;

  constructor(private readonly deps: EvaluatorDeps) {
    this.now = deps.now ?? Date.now;
  }

  async evaluate(environment: string, req: EvaluateRequest): Promise<Evaluation> {
    const catalog = this.deps.catalog();
    const operation = lookupOperation(catalog, environment, req.operationKey);
    if (!operation) {
      throw new ApiError('unknown_operation', `operationKey "${req.operationKey}" is not a protected operation configured in this environment`, [
        { path: 'operationKey', message: 'unknown operation' },
      ]);
    }
    const policy = catalog.policies.get(operation.policyId)!;
    const nowMs = this.now();
    const telemetryId = newTelemetryId(nowMs);

    const facts = buildFacts(req, operation, nowMs);
    // Only a challenge being checked or issued needs the fingerprint (a hash over the request).
    let fingerprint: string | undefined;
    const fingerprintOf = () => (fingerprint ??= transactionFingerprint(environment, req));
    const consumed = await this.consumeChallenge(environment, fingerprintOf, req);
    let evaluation: Evaluation;
    try {
      evaluation = await this.assess({ environment, req, operation, policy, facts, fingerprintOf, consumed, telemetryId, nowMs });
    } catch (err) {
      // Failed before there was an event (a counter or the challenge store down): the retry its
      // error calls for must find the challenge this one used up.
      if (consumed) await this.revert({ consumed }).catch(() => undefined);
      throw err;
    }
    if (this.deps.record) await this.deps.record(evaluation.event).catch((err: unknown) => commitFailed(err, evaluation.challenges, this.revert, evaluation.event));
    return evaluation;
  }

  /** Everything after the challenge is used up: risk → (advisory) → policy → decide, and the event. */
  private async assess(x: {
    environment: string;
    req: EvaluateRequest;
    operation: CompiledOperation;
    policy: CompiledPolicy;
    facts: Facts;
    fingerprintOf: () => string;
    consumed: StoredChallenge | undefined;
    telemetryId: string;
    nowMs: number;
  }): Promise<Evaluation> {
    const { environment, req, operation, policy, facts, fingerprintOf, consumed, telemetryId, nowMs } = x;
    const challenge = challengeState(req, consumed);
    const retrying = challenge.kind === 'satisfied';

    const risk = assessRisk(policy.signals, facts, policy.thresholds);
    // A satisfied retry keeps the challenged score (SPEC §3 rule 2), so it is not re-scored: the
    // rules read that score too, lest a dropped AI delta or an older human signal deny the retry.
    const ai = retrying ? undefined : await this.deps.advisor?.assess({ operation, policy, facts, risk });
    const score = retrying ? challenge.score : ai?.status === 'applied' ? clampScore(risk.score + ai.scoreDelta) : risk.score;
    const band = retrying ? challenge.band : bandOf(score, policy.thresholds);

    // A satisfied retry is not counted (its challenged evaluation was), but the window still holds it
    // back: else challenges collected over the TTL could be redeemed all at once, far past `max`.
    const velocity = policy.serviceWindow ? { serviceCount: await this.countVelocity(environment, req, policy, nowMs, !retrying) } : {};
    // Object.assign, not a spread: V8 promoted each spread copy of the facts (~500 B an evaluation)
    // out of the young generation, dead, for a major GC to collect (bench/ROUNDS.md, fifty-second
    // round; test/unit/promotion.test.ts).
    const run = await runPolicy(policy, Object.assign({} as PolicyFacts, facts, { velocity, risk: { score, band, base: risk.score } }));
    const decided = decide({ score, band, riskReasons: risk.reasons, fired: run.fired, challenge, stepUpChallenge: policy.stepUpChallenge });
    const monitored = operation.mode === 'monitor' || policy.mode === 'monitor' ? monitorOutcome(decided) : undefined;
    const outcome = monitored?.answered ?? decided;

    const issued = outcome.decision === 'step_up_required' ? await this.issueChallenge(environment, fingerprintOf(), outcome, telemetryId, nowMs) : undefined;
    const response = this.respond(operation, policy, outcome, telemetryId, issued, ai);
    const event = this.toEvent({ environment, req, operation, policy, facts, velocity, risk, run, outcome, monitor: monitored?.monitor, telemetryId, issued, ai, challenge, nowMs });
    return { response, event, challenges: consumed || issued ? { consumed, issued } : undefined };
  }

  /** Undoes an evaluation's changes to the challenges (its event was not committed). */
  readonly revert = (changes: ChallengeChanges): Promise<void> => this.deps.challenges.revert(changes, this.now());

  /** The live challenge a retry reporting a result names (by id or by fingerprint), used up. */
  private async consumeChallenge(environment: string, fingerprintOf: () => string, req: EvaluateRequest): Promise<StoredChallenge | undefined> {
    const result = req.challengeResult;
    if (!result || result.passed === undefined) return undefined;
    return this.deps.challenges.consume(environment, fingerprintOf(), result.challengeId, this.now());
  }

  private countVelocity(environment: string, req: EvaluateRequest, policy: CompiledPolicy, nowMs: number, counted: boolean): Promise<number> {
    const key = `${environment}\u0000${req.actor.id}\u0000${req.operationKey}`;
    const { seconds } = policy.serviceWindow!;
    return counted ? this.deps.counters.hit(key, seconds, nowMs) : this.deps.counters.peek(key, seconds, nowMs);
  }

  private async issueChallenge(environment: string, fingerprint: string, outcome: Outcome, telemetryId: string, nowMs: number): Promise<StoredChallenge> {
    const challenge: StoredChallenge = {
      // 122 random bits from randomUUID's cached pool: randomBytes makes a system call each time
      // (3% of the evaluation thread's samples, eighteenth round in bench/ROUNDS.md).
      id: `ch_${crypto.randomUUID().replaceAll('-', '')}`,
      type: outcome.challengeType!,
      fingerprint,
      environment,
      score: outcome.score,
      band: outcome.band,
      reasons: outcome.reasons,
      telemetryId,
      expiresAt: nowMs + this.deps.challengeTtlMs,
    };
    await this.deps.challenges.issue(challenge, nowMs);
    return challenge;
  }

  private respond(
    operation: CompiledOperation,
    policy: CompiledPolicy,
    outcome: Outcome,
    telemetryId: string,
    issued: StoredChallenge | undefined,
    ai: AiAssessment | undefined,
  ): EvaluateResponse {
    const response: EvaluateResponse = {
      decision: outcome.decision,
      score: outcome.score,
      riskBand: outcome.band,
      reasons: outcome.reasons,
      telemetryId,
      operationKey: operation.key,
      operationDisplayName: operation.displayName,
      actionType: operation.actionType,
      resourceType: operation.resourceType,
      sensitivity: operation.sensitivity,
      policyId: policy.id,
      policyVersionId: policy.versionId,
      warnings: [],
    };
    if (issued) response.challenge = { type: issued.type, id: issued.id, expiresAt: new Date(issued.expiresAt).toISOString() };
    if (outcome.redaction) response.redaction = outcome.redaction;
    if (outcome.retryAfterSeconds !== undefined) response.retryAfterSeconds = outcome.retryAfterSeconds;
    if (ai) response.aiAssessment = ai;
    return response;
  }

  private toEvent(x: {
    environment: string;
    req: EvaluateRequest;
    operation: CompiledOperation;
    policy: CompiledPolicy;
    facts: Facts;
    velocity: { serviceCount?: number };
    risk: RiskAssessment;
    run: PolicyRun;
    outcome: Outcome;
    monitor: MonitoredOutcome | undefined;
    telemetryId: string;
    issued: StoredChallenge | undefined;
    ai: AiAssessment | undefined;
    challenge: ChallengeState;
    nowMs: number;
  }): EventRecord {
    const { outcome } = x;
    return {
      telemetryId: x.telemetryId,
      environment: x.environment,
      source: 'evaluate',
      createdAt: x.nowMs,
      operationKey: x.operation.key,
      actorId: x.req.actor.id,
      resourceType: x.req.resource.type,
      resourceId: x.req.resource.id,
      decision: outcome.decision,
      score: outcome.score,
      riskBand: outcome.band,
      reasons: outcome.reasons,
      policyId: x.policy.id,
      policyVersionId: x.policy.versionId,
      ...(x.monitor ? { monitored: true } : {}),
      requestSummary: requestSummary(x.req),
      explanation: {
        signals: x.risk.contributions,
        rules: x.run.outcomes,
        thresholds: x.policy.thresholds,
        ...(x.issued ? { challenge: { type: x.issued.type, id: x.issued.id, outcome: 'issued' } } : {}),
        ...(x.challenge.kind !== 'none' ? { challengeResult: x.challenge.kind } : {}),
        ...(outcome.redaction ? { redaction: outcome.redaction } : {}),
        ...(outcome.retryAfterSeconds !== undefined ? { retryAfterSeconds: outcome.retryAfterSeconds } : {}),
        ...(x.ai ? { aiAssessment: x.ai } : {}),
        ...(x.monitor ? { monitor: x.monitor } : {}),
        baseScore: x.risk.score,
        // TPS's own velocity count is an input too: replay re-decides with the count that was seen.
        facts: { ...(x.facts as unknown as Record<string, unknown>), ...(x.velocity.serviceCount !== undefined ? { velocity: x.velocity } : {}) },
      },
    };
  }
}
