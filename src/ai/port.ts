import type { AdvisoryPort } from '../evaluate/advisory.js';
import type { CompiledOperation } from '../policy/catalog.js';
import type { Advisor } from './advisor.js';
import { minimize } from './minimize.js';
import { resolveAiSettings } from './settings.js';
import type { AiSettings } from './types.js';

/**
 * The evaluate path's view of the advisor: settings resolved once per compiled operation (a reload
 * brings new operation objects, so the cache follows the configuration), and only the minimized
 * view of the transaction handed over. Operations without an `ai:` block get no assessment at all.
 */
export function advisoryPort(advisor: Pick<Advisor, 'assess'>): AdvisoryPort {
  const settingsOf = new WeakMap<CompiledOperation, AiSettings | null>();
  return {
    async assess({ operation, policy, facts, risk }) {
      let settings = settingsOf.get(operation);
      if (settings === undefined) {
        settings = operation.ai || policy.ai ? resolveAiSettings(operation.ai, policy.ai) : null;
        settingsOf.set(operation, settings);
      }
      if (!settings) return undefined;
      const view = minimize(
        {
          operation: facts.operation,
          signals: risk.contributions,
          score: risk.score,
          band: risk.band,
          actor: facts.actor,
          resource: facts.resource,
          metadata: facts.metadata,
          requestData: facts.requestData,
        },
        settings,
      );
      return advisor.assess(view, settings);
    },
  };
}
