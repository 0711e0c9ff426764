// A small consecutive-failure circuit breaker. Hand-written rather than opossum: opossum trips on
// an error percentage over a rolling window (not N consecutive failures), runs its own timeouts and
// interval timers, its current major needs Node 22+, and its types live in DefinitelyTyped for an
// older major. This class is clock-injectable so tests need no sleeping.

export type BreakerState = 'closed' | 'open' | 'half_open';

export interface BreakerOptions {
  /** Consecutive failures (errors, timeouts, invalid output) that open the breaker. Default 5. */
  failureThreshold?: number;
  /** How long the breaker stays open before letting one trial call through. Default 30 s. */
  coolDownMs?: number;
  /** Clock, for tests. */
  now?: () => number;
  onStateChange?: (state: BreakerState) => void;
}

/**
 * What a call went out with. Its result counts only for the breaker it left: a call from before the
 * breaker opened (an older epoch) lands as neither success nor failure, so neither a late success
 * nor a late failure can settle a half-open breaker in place of its trial.
 */
export interface Permit {
  readonly trial: boolean;
  readonly epoch: number;
}

export class CircuitBreaker {
  private current: BreakerState = 'closed';
  private failures = 0;
  private openedAt = 0;
  /** Bumped each time the breaker opens: the calls of earlier epochs are stale. */
  private epoch = 0;
  private trialInFlight = false;
  private readonly threshold: number;
  private readonly coolDownMs: number;
  private readonly now: () => number;
  private readonly onStateChange?: (state: BreakerState) => void;

  constructor(options: BreakerOptions = {}) {
    this.threshold = Math.max(1, options.failureThreshold ?? 5);
    this.coolDownMs = Math.max(0, options.coolDownMs ?? 30_000);
    this.now = options.now ?? Date.now;
    this.onStateChange = options.onStateChange;
  }

  /** Current state; an open breaker whose cool-down has passed reads as half_open. */
  get state(): BreakerState {
    if (this.current === 'open' && this.now() - this.openedAt >= this.coolDownMs) this.transition('half_open');
    return this.current;
  }

  /**
   * A permit if a call may go out now, else undefined. Half-open lets exactly one trial through; the
   * others are refused until that trial reports back, so a dead model is not stampeded after the cool-down.
   */
  tryAcquire(): Permit | undefined {
    const state = this.state;
    if (state === 'closed') return { trial: false, epoch: this.epoch };
    if (state === 'half_open' && !this.trialInFlight) {
      this.trialInFlight = true;
      return { trial: true, epoch: this.epoch };
    }
    return undefined;
  }

  /** While closed, a success resets the consecutive count; the half-open trial's closes the breaker. */
  onSuccess(permit: Permit): void {
    if (this.stale(permit)) return;
    this.failures = 0;
    if (permit.trial) {
      this.trialInFlight = false;
      this.transition('closed');
    }
  }

  /** While closed, the threshold'th consecutive failure opens the breaker; a failed trial reopens it. */
  onFailure(permit: Permit): void {
    if (this.stale(permit)) return;
    this.failures += 1;
    if (permit.trial || this.failures >= this.threshold) {
      this.trialInFlight = false;
      this.openedAt = this.now();
      this.epoch += 1;
      this.transition('open');
    }
  }

  /** A call that went out before the breaker last opened. */
  private stale(permit: Permit): boolean {
    return permit.epoch !== this.epoch;
  }

  private transition(state: BreakerState): void {
    this.current = state;
    this.onStateChange?.(state);
  }
}
