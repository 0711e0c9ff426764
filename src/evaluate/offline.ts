import type { AiAssessment, EvaluateRequest } from '../api/types.js';
import type { Catalog, CompiledOperation } from '../policy/catalog.js';
import type { CompiledPolicy } from '../policy/compile.js';
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
  async close(): Promise<void> {}
}

/** Mirrors the advisory's own switch: no `ai:` block means off; a block means on unless enabled: false. */
export function aiEnabled(operation: CompiledOperation, policy: CompiledPolicy): boolean {
  const blocks = [operation.ai, policy.ai].filter((b) => b !== undefined && b !== null);
  return blocks.length > 0 && Object.assign({}, ...blocks).enabled !== false;
}

/**
 * An advisory that answers with an assessment already made (the one an event recorded, or one a
 * fixture names) instead of calling a model: replay never calls a model, and fixtures stay offline.
 */
export class RecordedAdvisory implements AdvisoryPort {
  constructor(private readonly recorded: AiAssessment | undefined) {}
  async assess({ operation, policy }: AdvisoryInput): Promise<AiAssessment | undefined> {
    return this.recorded && aiEnabled(operation, policy) ? this.recorded : undefined;
  }
}
