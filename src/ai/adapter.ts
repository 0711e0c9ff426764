// The one seam between the advisor and a model provider. A provider is one file that implements
// ModelAdapter; the advisor owns timeouts, the breaker, validation and clamping, so adapters stay dumb.
import type { AdvisoryView, AiSettings } from './types.js';

export interface ModelAdapter {
  /**
   * Asks the model about one view and resolves with its parsed JSON answer (not yet validated).
   * settings.model is already resolved (YAML model, else TPS_AI_MODEL). Must honour `signal`.
   * Throws ModelHttpError for a non-2xx answer, ModelOutputError when the answer is not JSON,
   * anything else for network failures.
   */
  complete(view: AdvisoryView, settings: AiSettings, signal: AbortSignal): Promise<unknown>;
}

/** The model server answered with a non-2xx status: reported as `error`. */
export class ModelHttpError extends Error {
  constructor(readonly status: number) {
    super(`model server answered HTTP ${status}`);
    this.name = 'ModelHttpError';
  }
}

/** The model server answered, but not with parseable JSON: reported as `invalid_output`. `code` (logged) says how. */
export class ModelOutputError extends Error {
  constructor(
    message: string,
    readonly code = 'invalid_output',
  ) {
    super(message);
    this.name = 'ModelOutputError';
  }
}
