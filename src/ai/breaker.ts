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

export class CircuitBreaker {
  private current: BreakerState = 'closed';
  private failures = 0;
  private openedAt = 0;
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
   * Whether a call may go out now. Half-open lets exactly one trial through; the others are
   * rejected until that trial reports back, so a dead model is not stampeded after the cool-down.
   */
  tryAcquire(): boolean {
    const state = this.state;
    if (state === 'closed') return true;
    if (state === 'half_open' && !this.trialInFlight) {
      this.trialInFlight = true;
      return true;
    }
    return false;
  }

  /**
   * While closed, a success resets the consecutive count; only the half-open trial closes the
   * breaker. A call that went out before the breaker opened and succeeds after is ignored: the
   * cool-down and the trial stand.
   */
  onSuccess(): void {
    if (this.current === 'closed') {
      this.failures = 0;
    } else if (this.current === 'half_open' && this.trialInFlight) {
      this.trialInFlight = false;
      this.failures = 0;
      this.transition('closed');
    }
  }

  onFailure(): void {
    this.trialInFlight = false;
    this.failures += 1;
    if (this.current === 'half_open' || (this.current === 'closed' && this.failures >= this.threshold)) {
      this.openedAt = this.now();
      this.transition('open');
    }
  }

  private transition(state: BreakerState): void {
    this.current = state;
    this.onStateChange?.(state);
  }
}
