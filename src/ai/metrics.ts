// Prometheus metrics of the AI advisory. The lead owns the process registry; this only registers
// on the registry it is given, so tests can use a fresh one each.
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { BreakerState } from './breaker.js';
import { AI_STATUSES } from '../api/types.js';

export type AiErrorKind = 'http' | 'network' | 'breaker_open';

export interface AiMetrics {
  /** Every assessment by outcome, skipped included. */
  calls: Counter<'status'>;
  /** Duration of calls that went to the model (not skipped, not refused by the breaker). */
  latency: Histogram<'status'>;
  timeouts: Counter<string>;
  errors: Counter<'kind'>;
  /** 0 closed, 1 half-open, 2 open. */
  breakerState: Gauge<string>;
}

export const BREAKER_STATE_VALUE: Record<BreakerState, number> = { closed: 0, half_open: 1, open: 2 };

export function registerAiMetrics(registry: Registry): AiMetrics {
  const registers = [registry];
  const calls = new Counter({
    name: 'tps_ai_calls_total',
    help: 'AI advisory assessments by status (applied, skipped, timeout, error, invalid_output)',
    labelNames: ['status'] as const,
    registers,
  });
  // Budgets default to 300 ms, so the buckets are dense below a second.
  const latency = new Histogram({
    name: 'tps_ai_call_duration_seconds',
    help: 'Duration of AI model calls, by status',
    labelNames: ['status'] as const,
    buckets: [0.01, 0.025, 0.05, 0.1, 0.2, 0.3, 0.5, 1, 2, 5],
    registers,
  });
  const timeouts = new Counter({ name: 'tps_ai_timeouts_total', help: 'AI model calls abandoned at their time budget', registers });
  const errors = new Counter({
    name: 'tps_ai_errors_total',
    help: 'AI advisory errors by kind (http, network, breaker_open)',
    labelNames: ['kind'] as const,
    registers,
  });
  const breakerState = new Gauge({
    name: 'tps_ai_breaker_state',
    help: 'AI model circuit breaker: 0 closed, 1 half-open, 2 open',
    registers,
    // Across workers (src/cluster/metrics.ts), each with its own breaker: the least healthy.
    aggregator: 'max',
  });
  breakerState.set(0);
  // Touch every status so dashboards see zeros rather than missing series.
  for (const status of AI_STATUSES) calls.inc({ status }, 0);
  return { calls, latency, timeouts, errors, breakerState };
}
