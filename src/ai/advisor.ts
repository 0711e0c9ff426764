// The advisor: one model call per assessment, bounded by a time budget and a circuit breaker, its
// answer validated and clamped. assess() never throws and never outlives its budget, so a slow or
// dead model can only cost evaluate `timeoutMs`; every failure yields scoreDelta 0.
import * as yup from 'yup';
import { safeError } from '../http/logger.js';
import { ModelHttpError, ModelOutputError, type ModelAdapter } from './adapter.js';
import { CircuitBreaker, type BreakerOptions } from './breaker.js';
import { BREAKER_STATE_VALUE, type AiErrorKind, type AiMetrics } from './metrics.js';
import { createOpenAiAdapter } from './openai.js';
import { clampDelta, effectiveMaxDelta } from './settings.js';
import { AI_DEFAULT_TIMEOUT_MS, type AdvisoryView, type AiAssessment, type AiSettings, type AiStatus } from './types.js';

export interface AdvisorOptions {
  /** TPS_AI_URL. Without it (and without `adapter`) every assessment is `skipped`. */
  url?: string;
  /** TPS_AI_MODEL: the model when the YAML block names none. */
  model?: string;
  /** TPS_AI_API_KEY, sent as a bearer token when set. */
  apiKey?: string;
  /** TPS_AI_TIMEOUT_MS: a ceiling over every per-operation timeoutMs. */
  timeoutMs?: number;
  /** Another provider; defaults to the OpenAI-compatible adapter on `url`. */
  adapter?: ModelAdapter;
  breaker?: Omit<BreakerOptions, 'onStateChange'>;
  metrics?: AiMetrics;
  /** Where failure details go (pino-compatible); the assessment itself carries no error text. */
  logger?: { warn(obj: object, msg: string): void };
}

export interface Advisor {
  assess(view: AdvisoryView, settings: AiSettings): Promise<AiAssessment>;
  /** Exposed for readiness/metrics and tests. */
  readonly breaker: CircuitBreaker;
}

const RATIONALE_MAX = 200;
const LABELS_MAX = 5;
const LABEL_MAX = 40;

// Strict: "12" is not a number here. Over-long rationale or extra labels are trimmed, not rejected:
// the model obeyed the shape, and the evidence stays bounded either way.
const answerSchema = yup
  .object({
    scoreDelta: yup.number().strict().required(),
    rationale: yup.string().strict().defined(),
    labels: yup.array(yup.string().strict().required()).strict().default([]),
  })
  .strict();

export function createAdvisor(options: AdvisorOptions = {}): Advisor {
  const { metrics, logger } = options;
  const adapter = options.adapter ?? (options.url ? createOpenAiAdapter({ url: options.url, apiKey: options.apiKey }) : undefined);
  const breaker = new CircuitBreaker({
    ...options.breaker,
    onStateChange: (state) => metrics?.breakerState.set(BREAKER_STATE_VALUE[state]),
  });

  const finish = (assessment: AiAssessment, errorKind?: AiErrorKind): AiAssessment => {
    metrics?.calls.inc({ status: assessment.status });
    if (errorKind) metrics?.errors.inc({ kind: errorKind });
    if (assessment.status === 'timeout') metrics?.timeouts.inc();
    if (errorKind !== 'breaker_open' && assessment.latencyMs !== undefined) metrics?.latency.observe({ status: assessment.status }, assessment.latencyMs / 1000);
    return assessment;
  };

  async function assess(view: AdvisoryView, settings: AiSettings): Promise<AiAssessment> {
    if (!adapter || !settings?.enabled) return finish({ status: 'skipped', scoreDelta: 0 });
    const model = settings.model ?? options.model;
    const permit = breaker.tryAcquire();
    if (!permit) {
      // Reported without waiting: the point of the breaker is that evaluate pays nothing.
      return finish({ status: 'error', scoreDelta: 0, model, latencyMs: 0 }, 'breaker_open');
    }
    const maxDelta = effectiveMaxDelta(settings.maxScoreDelta);
    const budget = Math.min(positive(settings.timeoutMs) ?? AI_DEFAULT_TIMEOUT_MS, positive(options.timeoutMs) ?? Infinity);
    const started = performance.now();
    const elapsed = () => Math.round(performance.now() - started);
    const controller = new AbortController();
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<typeof TIMED_OUT>((resolve) => {
      timer = setTimeout(() => {
        controller.abort();
        resolve(TIMED_OUT);
      }, budget);
    });

    try {
      const call = Promise.resolve().then(() => adapter.complete(view, { ...settings, model, maxScoreDelta: maxDelta }, controller.signal));
      call.catch(() => undefined); // the loser of the race must not become an unhandled rejection
      // Racing (not only aborting) keeps the budget even for an adapter that ignores its signal.
      const raw = await Promise.race([call, timedOut]);
      if (raw === TIMED_OUT) {
        breaker.onFailure(permit);
        return finish({ status: 'timeout', scoreDelta: 0, model, latencyMs: elapsed() });
      }
      const answer = validate(raw);
      if (!answer) {
        breaker.onFailure(permit);
        logger?.warn({ model }, 'AI model answer failed validation');
        return finish({ status: 'invalid_output', scoreDelta: 0, model, latencyMs: elapsed() });
      }
      breaker.onSuccess(permit);
      return finish({
        status: 'applied',
        scoreDelta: clampDelta(answer.scoreDelta, maxDelta),
        model,
        rationale: answer.rationale.slice(0, RATIONALE_MAX),
        labels: answer.labels.slice(0, LABELS_MAX).map((l) => l.slice(0, LABEL_MAX)),
        latencyMs: elapsed(),
      });
    } catch (err) {
      if (controller.signal.aborted) {
        breaker.onFailure(permit);
        return finish({ status: 'timeout', scoreDelta: 0, model, latencyMs: elapsed() });
      }
      breaker.onFailure(permit);
      const status: AiStatus = err instanceof ModelOutputError ? 'invalid_output' : 'error';
      const kind: AiErrorKind | undefined = status === 'error' ? (err instanceof ModelHttpError ? 'http' : 'network') : undefined;
      // Name and code only: fetch's messages quote the URL it was given, a bad header's value (the key) too.
      const httpStatus = err instanceof ModelHttpError ? { status: err.status } : {};
      logger?.warn({ err: safeError(err, { message: false }), ...httpStatus, model }, 'AI model call failed');
      return finish({ status, scoreDelta: 0, model, latencyMs: elapsed() }, kind);
    } finally {
      clearTimeout(timer);
    }
  }

  return {
    breaker,
    // The outer catch guarantees "never throws" even if metrics or the logger misbehave.
    assess: (view, settings) =>
      assess(view, settings).catch((err: unknown): AiAssessment => {
        try {
          logger?.warn({ err: safeError(err, { message: false }) }, 'AI advisory failed unexpectedly');
        } catch {
          /* nothing left to report to */
        }
        return { status: 'error', scoreDelta: 0 };
      }),
  };
}

/** Final score after the advisory: only an applied delta moves it, and it stays within 0..100. */
export function applyAssessment(score: number, assessment: AiAssessment | undefined): number {
  const delta = assessment?.status === 'applied' && Number.isFinite(assessment.scoreDelta) ? assessment.scoreDelta : 0;
  return Math.min(100, Math.max(0, score + delta));
}

const TIMED_OUT = Symbol('timed out');

function validate(raw: unknown): { scoreDelta: number; rationale: string; labels: string[] } | undefined {
  try {
    const answer = answerSchema.validateSync(raw);
    if (!Number.isFinite(answer.scoreDelta)) return undefined;
    // strict mode skips defaults, so an omitted labels key arrives as undefined
    return { scoreDelta: answer.scoreDelta, rationale: answer.rationale, labels: answer.labels ?? [] };
  } catch {
    return undefined;
  }
}

function positive(n: number | undefined): number | undefined {
  return typeof n === 'number' && Number.isFinite(n) && n > 0 ? n : undefined;
}
