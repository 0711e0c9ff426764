import { Fact } from 'json-rules-engine';
import type { RiskBand, RuleOutcome } from '../api/types.js';
import type { CompiledPolicy, CompiledRule } from './compile.js';
import { logRuleFailure } from './failures.js';

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

/**
 * A rule that threw while it ran, as it counts: deny, policy_error. Its error would otherwise fail
 * the evaluation (500), which a fail-open client reads as allow.
 */
const failedRule = ({ name, builtIn, conditions }: CompiledRule): CompiledRule => ({ name, builtIn, conditions, decision: 'deny', reason: 'policy_error' });

/** Runs the policy's json-rules-engine over the facts, on an engine of the policy's own that no other run holds (engines.ts). */
export async function runPolicy(policy: CompiledPolicy, facts: PolicyFacts): Promise<PolicyRun> {
  const firedIdx = new Set<number>();
  // Only a run that threw has failed rules: the common run allocates no set for them.
  let failedIdx: Set<number> | undefined;
  // Shorthands are checked here (CompiledRule.check); a policy may need no engine at all.
  if (policy.engines) {
    const runtime: Record<string, Fact> = {};
    for (const id of policy.engineFacts) if (id in facts) runtime[id] = new Fact(id, facts[id], UNCACHED);
    try {
      const { results } = await policy.engines.run(runtime);
      for (const r of results) firedIdx.add((r.event!.params as { index: number }).index);
    } catch (err) {
      // The run does not say which rule threw: each is run alone to find out, and the others count.
      const each = await policy.engines.runEach(runtime);
      const failed = (failedIdx = new Set<number>());
      for (const [i, result] of each) {
        if (result === true) firedIdx.add(i);
        else if (result instanceof Error) failed.add(i);
      }
      // None threw alone: every rule the engine ran is in doubt.
      if (failed.size === 0) for (const i of each.keys()) failed.add(i);
      for (const i of failed) logRuleFailure(policy.id, policy.rules[i]!.name, each.get(i) instanceof Error ? each.get(i) : err);
    }
  }
  const fired: CompiledRule[] = [];
  const outcomes: RuleOutcome[] = policy.rules.map((compiled, i) => {
    const failed = failedIdx?.has(i) === true;
    const rule = failed ? failedRule(compiled) : compiled;
    const hit = failed || (rule.check ? rule.check(facts) : firedIdx.has(i));
    if (hit) fired.push(rule);
    return { name: rule.name, fired: hit, decision: rule.decision, reason: rule.reason };
  });
  return { fired, outcomes };
}
