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
 * A stored event as a fixture case (docs/policy-as-code.md, "Rule fixtures"): its request rebuilt
 * from the recorded facts, the state it met (TPS's velocity count, the advisory assessment), and
 * what was decided as the expectation. A satisfied step-up retry becomes two steps: the request
 * that was challenged, then the retry. Throws when the event cannot be re-decided (ingested).
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
  if (tx.serviceCount !== undefined) step.serviceCount = tx.serviceCount;
  if (tx.ai) step.ai = { status: tx.ai.status, scoreDelta: tx.ai.scoreDelta };
  const expect = expectationOf(event);
  if (tx.challenge?.kind === 'satisfied') {
    c.steps = [
      { ...step, expect: { decision: 'step_up_required' } },
      { retry: { passed: true }, expect },
    ];
  } else {
    if (tx.challenge) step.request = { ...step.request, challengeResult: { passed: tx.challenge.kind !== 'failed' } };
    Object.assign(c, step, { expect });
  }
  return c;
}

/** The case as YAML, one list item, to paste under `cases:` of rules/<policy>.fixtures.yaml. */
export function fixtureCaseYaml(c: CaseSpec, comment?: string): string {
  const doc = new Document([c]);
  // Lists and maps of plain values go on one line ({ id: u1, roles: [a, b] }), as hand-written
  // fixtures do; anything with nested collections stays in block style.
  visit(doc, {
    Collection(_, node) {
      const items = isMap(node) ? node.items.map((p) => (isPair(p) ? p.value : p)) : node.items;
      if (items.every((i) => isScalar(i) || (isCollection(i) && i.flow))) node.flow = true;
    },
  });
  if (comment) doc.commentBefore = ` ${comment}`;
  return doc.toString({ lineWidth: 140 });
}
