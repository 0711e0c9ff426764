import { Fact } from 'json-rules-engine';
import type { RiskBand, RuleOutcome } from '../api/types.js';
import type { CompiledPolicy, CompiledRule } from './compile.js';

export interface PolicyFacts {
  [root: string]: unknown;
}

/**
 * What the evaluator adds to a request's facts for the rules alone: TPS's own velocity count
 * (counted after scoring) and the score itself. src/facts/paths.ts lists their leaves.
 */
export interface RuleOnlyFacts {
  velocity: { serviceCount?: number };
  risk: { score: number; band: RiskBand; base: number };
}

export interface PolicyRun {
  /** Rules whose conditions held, in declaration order. */
  fired: CompiledRule[];
  outcomes: RuleOutcome[];
}

// Facts are constants of one run: handing them over as uncached facts spares json-rules-engine
// hashing each one for a result cache that constant facts never use (a tenth of a run's time).
const UNCACHED = { cache: false };

/** Runs the policy's json-rules-engine over the facts, on an engine of the policy's own that no other run holds (engines.ts). */
export async function runPolicy(policy: CompiledPolicy, facts: PolicyFacts): Promise<PolicyRun> {
  const firedIdx = new Set<number>();
  // Shorthands are checked here (CompiledRule.check); a policy may need no engine at all.
  if (policy.engines) {
    const runtime: Record<string, Fact> = {};
    for (const id of policy.engineFacts) if (id in facts) runtime[id] = new Fact(id, facts[id], UNCACHED);
    const { results } = await policy.engines.run(runtime);
    for (const r of results) firedIdx.add((r.event!.params as { index: number }).index);
  }
  const fired: CompiledRule[] = [];
  const outcomes: RuleOutcome[] = policy.rules.map((rule, i) => {
    const hit = rule.check ? rule.check(facts) : firedIdx.has(i);
    if (hit) fired.push(rule);
    return { name: rule.name, fired: hit, decision: rule.decision, reason: rule.reason };
  });
  return { fired, outcomes };
}
