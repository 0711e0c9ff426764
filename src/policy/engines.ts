import { Engine, type EngineResult, type Fact, type RuleProperties } from 'json-rules-engine';
import { dotted, exists } from './direct.js';
import { everyValue, inList, notInList, someValue } from './lists.js';

/** An engine as every policy's rules run in it: TPS's resolver and operators. */
export function newEngine(): Engine {
  // A dotted-path resolver instead of JSONPath: facts are plain objects and paths plain keys.
  const engine = new Engine([], { allowUndefinedFacts: true, pathResolver: dotted as never });
  engine.addOperator('exists', exists);
  // The engine's own throw on a list side that is not a list (lists.ts).
  engine.addOperator('in', inList);
  engine.addOperator('notIn', notInList);
  engine.addOperatorDecorator('someValue', someValue);
  engine.addOperatorDecorator('everyValue', everyValue);
  return engine;
}

// Engines kept idle beyond this are dropped: more runs than this at once are a burst, not the norm.
const MAX_IDLE = 16;

/**
 * One policy's rules under rules:, as json-rules-engine engines, one for each run in flight.
 * json-rules-engine keeps a run's status on its Engine, not on the run: a run that starts on an
 * engine while another run on it is about to finish reads FINISHED at its first step and skips
 * every rule, so its rules would not fire (test/unit/policy-engines.test.ts). The evaluator's runs
 * overlap whenever evaluations of one policy resume together, so no two of them share an engine.
 */
export class PolicyEngines {
  private readonly idle: Engine[];

  constructor(private readonly rules: RuleProperties[]) {
    // One built now, so that a rule json-rules-engine refuses fails the compile, not a request.
    this.idle = [this.build()];
  }

  async run(facts: Record<string, Fact>): Promise<EngineResult> {
    const engine = this.idle.pop() ?? this.build();
    try {
      return await engine.run(facts);
    } finally {
      if (this.idle.length < MAX_IDLE) this.idle.push(engine);
    }
  }

  /**
   * Each rule alone, on an engine of its own: whether it fired, or the error it threw. Only for a
   * run of them all that threw (run.ts), which does not say which rule did.
   */
  async runEach(facts: Record<string, Fact>): Promise<Map<number, boolean | Error>> {
    const each = new Map<number, boolean | Error>();
    for (const rule of this.rules) {
      const index = (rule.event.params as { index: number }).index;
      const engine = newEngine();
      engine.addRule(rule);
      try {
        each.set(index, (await engine.run(facts)).results.length > 0);
      } catch (err) {
        each.set(index, err instanceof Error ? err : new Error(String(err)));
      }
    }
    return each;
  }

  private build(): Engine {
    const engine = newEngine();
    for (const rule of this.rules) engine.addRule(rule);
    return engine;
  }
}
