// What evaluate does when TPS cannot answer: `open` (synthetic allow), `closed` (synthetic deny)
// or `throw`. Chosen globally or per operation, because a read of public data and a payment
// change rarely deserve the same trade-off between availability and protection.

export const FAILURE_MODES = ['open', 'closed', 'throw'] as const;
export type FailureMode = (typeof FAILURE_MODES)[number];

export type FailureModeOption =
  | FailureMode
  | { default?: FailureMode; operations?: Record<string, FailureMode> };

/** Fail closed unless told otherwise: a protection service that silently allows is worse than none. */
export const DEFAULT_FAILURE_MODE: FailureMode = 'closed';

function check(mode: unknown, where: string): FailureMode {
  if ((FAILURE_MODES as readonly unknown[]).includes(mode)) return mode as FailureMode;
  throw new TypeError(`TPS: ${where} must be one of ${FAILURE_MODES.join(', ')}; got ${JSON.stringify(mode)}`);
}

/** Validates the option once at construction, so a typo cannot surface only during an outage. */
export function validateFailureMode(option: FailureModeOption | undefined): void {
  if (option === undefined) return;
  if (typeof option === 'string') {
    check(option, 'failureMode');
    return;
  }
  if (option.default !== undefined) check(option.default, 'failureMode.default');
  for (const [key, mode] of Object.entries(option.operations ?? {})) check(mode, `failureMode.operations["${key}"]`);
}

export function failureModeFor(option: FailureModeOption | undefined, operationKey: string): FailureMode {
  if (option === undefined) return DEFAULT_FAILURE_MODE;
  if (typeof option === 'string') return option;
  const perOperation = option.operations;
  if (perOperation && Object.prototype.hasOwnProperty.call(perOperation, operationKey)) return perOperation[operationKey]!;
  return option.default ?? DEFAULT_FAILURE_MODE;
}
