import yaml from 'js-yaml';
import { Document, isCollection, isMap, isPair, isScalar, visit } from 'yaml';
import type { DecisionEvent } from '../api/types.js';
import type { CaseSpec, Expectation, StepSpec } from '../fixtures/format.js';
import type { Catalog } from '../policy/catalog.js';
import { recover } from './recorded.js';

/** What the recorded event decided, as an exact expectation. */
function expectationOf(event: DecisionEvent): Expectation {
  const x = event.explanation;
  const expect: Expectation = { decision: event.decision, reasons: [...event.reasons], score: event.score };
  if (event.riskBand) expect.band = event.riskBand;
  if (x.challenge?.type) expect.challenge = x.challenge.type;
  if (x.redaction) expect.redaction = { fields: [...x.redaction.fields], strategy: x.redaction.strategy };
  if (x.retryAfterSeconds !== undefined) expect.retryAfterSeconds = x.retryAfterSeconds;
  expect.firedRules = x.rules.filter((r) => r.fired).map((r) => r.name);
  if (x.monitor) expect.monitor = { decision: x.monitor.decision, reasons: [...x.monitor.reasons] };
  return expect;
}

/**
 * A stored event as a fixture case (README, "Rule fixtures"): its request rebuilt from the recorded
 * facts, the state it met (TPS's velocity count, the advisory assessment), and what was decided as
 * the expectation. A satisfied step-up retry becomes two steps: the request that was challenged,
 * then the retry, which names the challenge type it passed and carries its own recorded count (read,
 * not counted: the challenged step's count is not in this event). Throws when the event cannot be
 * re-decided (ingested).
 */
export function eventToFixtureCase(event: DecisionEvent, catalog: Catalog, name?: string): CaseSpec {
  const recovered = recover(event);
  if (!recovered.ok) throw new Error(`event ${event.telemetryId} cannot become a fixture: ${recovered.reason}`);
  const { tx } = recovered;
  const { operationKey, ...request } = tx.request;
  const op = catalog.operations.get(operationKey);
  const c: CaseSpec = { name: name ?? `${operationKey} ${event.decision} (event ${event.telemetryId})`, operation: operationKey };
  if (op?.environments) c.environment = event.environment;
  const step: StepSpec = { request: request as StepSpec['request'] };
  if (tx.ai) step.ai = { status: tx.ai.status, scoreDelta: tx.ai.scoreDelta };
  const counted: Pick<StepSpec, 'serviceCount'> = tx.serviceCount === undefined ? {} : { serviceCount: tx.serviceCount };
  const expect = expectationOf(event);
  const type = tx.challengeType;
  if (tx.challenge?.kind === 'satisfied') {
    // Without a recorded type (an event stored before retries named it), the fixture loader fills in
    // the one its policy asks, or says to name it.
    c.steps = [
      { ...step, expect: { decision: 'step_up_required', ...(type ? { challenge: type } : {}) } },
      { retry: { passed: true, ...(type ? { type } : {}) }, ...counted, expect },
    ];
  } else {
    if (tx.challenge) {
      const passed = tx.challenge.kind !== 'failed';
      // An invalid retry found no challenge to pass, so in a case of one step any type is as invalid.
      const named = type ?? (passed ? (op && catalog.policies.get(op.policyId)?.stepUpChallenge) : undefined);
      step.request = { ...step.request, challengeResult: { passed, ...(named ? { type: named } : {}) } };
    }
    Object.assign(c, step, counted, { expect });
  }
  return c;
}

/**
 * Whether a string, written plain, would be read back as something else. The `yaml` package writes
 * YAML 1.2, which has no timestamps and no 0b101, so it leaves `2025-01-31` unquoted, and js-yaml's
 * default schema (what other tools reading the fixture may use) reads it as a Date; `<<` would be a
 * merge key. Asked of js-yaml's widest schema, so the case reads back the same wherever it is read.
 */
function readsAsAnotherType(s: string): boolean {
  if (s === '<<') return true;
  try {
    return yaml.load(s, { schema: yaml.DEFAULT_SCHEMA }) !== s;
  } catch {
    return true;
  }
}

/** The case as YAML, one list item, to paste under `cases:` of rules/<policy>.fixtures.yaml. */
export function fixtureCaseYaml(c: CaseSpec, comment?: string): string {
  const doc = new Document([c]);
  // Lists and maps of plain values go on one line ({ id: u1, roles: [a, b] }), as hand-written
  // fixtures do; anything with nested collections stays in block style.
  visit(doc, {
    Scalar(_, node) {
      if (typeof node.value === 'string' && readsAsAnotherType(node.value)) node.type = 'QUOTE_DOUBLE';
    },
    Collection(_, node) {
      const items = isMap(node) ? node.items.map((p) => (isPair(p) ? p.value : p)) : node.items;
      if (items.every((i) => isScalar(i) || (isCollection(i) && i.flow))) node.flow = true;
    },
  });
  if (comment) doc.commentBefore = ` ${comment}`;
  return doc.toString({ lineWidth: 140 });
}
