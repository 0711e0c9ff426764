import { clampDelta, effectiveMaxDelta, resolveAiSettings } from '../ai/settings.js';
import type { AiAssessment, EvaluateRequest } from '../api/types.js';
import type { Catalog } from '../policy/catalog.js';
import { MemoryChallengeStore, type ChallengeStore } from '../state/challenges.js';
import { MemoryVelocityCounter, type VelocityCounter } from '../state/counters.js';
import type { EventRecord } from '../store/eventStore.js';
import type { AdvisoryInput, AdvisoryPort } from './advisory.js';
import { Evaluator, type Evaluation } from './evaluator.js';

// Offline evaluation: the server's Evaluator, unchanged, with its state kept in this process and its
// events kept in memory instead of the event store. Fixtures, `tps explain`, `tps replay` and the
// demo seed all decide through this, so what they show is what the server would answer. Nothing
// is faked about the decision; only where state and events live differs (the HTTP suites cover those).

export const DEFAULT_CHALLENGE_TTL_MS = 600_000;

export interface OfflineOptions {
  catalog: Catalog;
  counters?: VelocityCounter;
  challenges?: ChallengeStore;
  advisor?: AdvisoryPort;
  now?: () => number;
  challengeTtlMs?: number;
  /** Called with each event as the Evaluator records it; by default events are kept in `events`. */
  record?: (event: EventRecord) => Promise<void> | void;
}

export class OfflineEvaluator {
  readonly events: EventRecord[] = [];
  readonly evaluator: Evaluator;
  readonly challenges: ChallengeStore;

  constructor(private readonly options: OfflineOptions) {
    this.challenges = options.challenges ?? new MemoryChallengeStore();
    const record = options.record;
    this.evaluator = new Evaluator({
      catalog: () => options.catalog,
      counters: options.counters ?? new MemoryVelocityCounter(),
      challenges: this.challenges,
      record: async (event) => {
        if (record) await record(event);
        else this.events.push(event);
      },
      advisor: options.advisor,
      challengeTtlMs: options.challengeTtlMs ?? DEFAULT_CHALLENGE_TTL_MS,
      now: options.now,
    });
  }

  /** Evaluates one request in `environment` (default: one the operation is configured in). */
  evaluate(req: EvaluateRequest, environment?: string): Promise<Evaluation> {
    return this.evaluator.evaluate(environment ?? defaultEnvironment(this.options.catalog, req.operationKey), req);
  }
}

/** An environment the operation is configured in: any name when it is not restricted. */
export function defaultEnvironment(catalog: Catalog, operationKey: string): string {
  const op = catalog.operations.get(operationKey);
  return op?.environments ? [...op.environments][0]! : 'development';
}

/** TPS's own velocity count, fixed: replay uses the count the event saw, a fixture the one it names. */
export class FixedVelocityCounter implements VelocityCounter {
  constructor(private readonly count: number) {}
  async hit(): Promise<number> {
    return this.count;
  }
  async peek(): Promise<number> {
    return this.count;
  }
  async close(): Promise<void> {}
}

/**
 * An advisory that answers with an assessment already made (the one an event recorded, or one a
 * fixture names) instead of calling a model: replay never calls a model, and fixtures stay offline.
 * The advisory's own settings still apply, as the server's advisor applies them to a model's answer:
 * no assessment unless the working tree enables it, a delta rounded and clamped to its maxScoreDelta,
 * and none but an applied assessment moves the score.
 */
export class RecordedAdvisory implements AdvisoryPort {
  constructor(private readonly recorded: Pick<AiAssessment, 'status' | 'scoreDelta'> | undefined) {}
  async assess({ operation, policy }: AdvisoryInput): Promise<AiAssessment | undefined> {
    const settings = resolveAiSettings(operation.ai, policy.ai);
    if (!this.recorded || !settings.enabled) return undefined;
    const scoreDelta = this.recorded.status === 'applied' ? clampDelta(this.recorded.scoreDelta, effectiveMaxDelta(settings.maxScoreDelta)) : 0;
    return { ...this.recorded, scoreDelta };
  }
}
