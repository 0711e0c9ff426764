import type { RuleOutcome } from '../api/types.js';
import type { CompiledPolicy, CompiledRule } from './compile.js';

export interface PolicyFacts {
  [root: string]: unknown;
}

export interface PolicyRun {
  /** Rules whose conditions held, in declaration order. */
  fired: CompiledRule[];
  outcomes: RuleOutcome[];
}

/** Runs the policy's json-rules-engine over the facts; the policy's own engine, built at compile. */
export async function runPolicy(policy: CompiledPolicy, facts: PolicyFacts): Promise<PolicyRun> {
  const { results } = await policy.engine.run(facts);
  const firedIdx = new Set<number>();
  for (const r of results) firedIdx.add((r.event!.params as { index: number }).index);
  const fired: CompiledRule[] = [];
  const outcomes: RuleOutcome[] = policy.rules.map((rule, i) => {
    const hit = firedIdx.has(i);
    if (hit) fired.push(rule);
    return { name: rule.name, fired: hit, decision: rule.decision, reason: rule.reason };
  });
  return { fired, outcomes };
}
