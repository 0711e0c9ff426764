import { CHALLENGE_TYPES, DECISIONS, REDACTION_STRATEGIES, type Decision } from '../api/types.js';
import { REASON_CODE_PATTERN } from '../reasons/catalog.js';
import { aiConfigSchema } from '../ai/settings.js';
import { ENVIRONMENT_NAME, ENVIRONMENT_NAME_RULE } from '../config/environmentName.js';
import { factPathProblem, RULE_ONLY_ROOTS } from '../facts/paths.js';
import { MAX_OPERATION_KEY_LENGTH } from '../validate/characters.js';
import { asIs, mapOf, strictObject, yup } from '../validate/kit.js';
import { factPathsOf } from './conditions.js';
import { factTypeProblem, signalTypeProblems } from './factTypes.js';
import { isFactReference, parseOperator, valueProblem } from './operators.js';

export { OPERATORS } from './operators.js';

// The YAML formats of operations/ and rules/. What these accept is documented in README
// ("YAML reference"); keep the two in step.

export const ACTION_TYPES = ['create', 'read', 'update', 'delete', 'export', 'import', 'approve', 'transfer', 'grant', 'login', 'other'] as const;
export const SENSITIVITIES = ['low', 'medium', 'high', 'critical'] as const;
export const TRANSFORMS = ['flag', 'clamp', 'inverse', 'ramp', 'nonEmpty', 'map', 'between'] as const;
/** enforce (default): the decision is answered. monitor: allow is answered, the would-be decision recorded. */
export const MODES = ['enforce', 'monitor'] as const;
export type Mode = (typeof MODES)[number];

const KEY = /^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)+$/;
const ID = /^[a-z][a-z0-9_-]{0,63}$/;
// A message that echoes what the YAML says is a function: yup would read a `${…}` in it as a parameter.
const factPath = yup
  .string()
  .required()
  .test('fact-path', 'unknown fact', function known(v) {
    const problem = v === undefined ? undefined : factPathProblem(v);
    return problem ? this.createError({ message: asIs(`${this.path} ${problem}`) }) : true;
  });

const signalFact = factPath.test(
  'signal-fact',
  '${path} cannot be read by a signal: velocity.* is counted after scoring and risk.* is the score itself; use them in a policy rule',
  (v) => !v || !(RULE_ONLY_ROOTS as readonly string[]).includes(v.split('.')[0]!),
);

/** The riskBand cut-offs a policy gets for those it does not write. */
export const DEFAULT_THRESHOLDS = { medium: 30, high: 60 } as const;

const reasonCode = yup.string().matches(REASON_CODE_PATTERN, '${path} must be a snake_case reason code');
const inRange = (v: unknown): v is number => typeof v === 'number' && v >= 0 && v <= 100;
const thresholdValue = yup.number().min(0, '${path} must be between 0 and 100').max(100, '${path} must be between 0 and 100');

export const aiSchema = aiConfigSchema.default(undefined);

export const operationSchema = strictObject({
  key: yup
    .string()
    .required()
    .matches(KEY, '${path} must look like resource.action (lowercase, dotted)')
    // Longer, no evaluate request could name it.
    .max(MAX_OPERATION_KEY_LENGTH, `\${path} must be at most ${MAX_OPERATION_KEY_LENGTH} characters, the longest operationKey a request may send`),
  displayName: yup.string().required().min(1).max(200),
  description: yup.string().max(2000),
  actionType: yup.string().required().oneOf(ACTION_TYPES),
  resourceType: yup.string().required().min(1).max(128),
  sensitivity: yup.string().required().oneOf(SENSITIVITIES),
  policy: yup.string().required().matches(ID, '${path} must be a policy id (lowercase letters, digits, - and _)'),
  environments: yup.array(yup.string().required().matches(ENVIRONMENT_NAME, `\${path} must be an environment name (${ENVIRONMENT_NAME_RULE})`)).min(1),
  mode: yup.string().oneOf(MODES),
  ai: aiSchema,
});

/**
 * A signal field that only some transforms read: on another it would do nothing, so that a
 * `range` on a flag (meant as between) silently never narrows it. Refused, not ignored.
 */
const onlyForTransforms = (...transforms: string[]) => ({
  name: 'only-for-transform',
  skipAbsent: true,
  test(this: yup.TestContext, v: unknown) {
    const transform = (this.parent as { transform?: string } | undefined)?.transform;
    if (v === undefined || !(TRANSFORMS as readonly string[]).includes(transform!) || transforms.includes(transform!)) return true;
    const path = this.path;
    return this.createError({ message: asIs(`${path} is only for transform${transforms.length > 1 ? 's' : ''} ${transforms.join(' and ')}; this signal's transform is ${transform}`) });
  },
});

const signalSchema = strictObject({
  description: yup.string().max(500),
  fact: signalFact,
  transform: yup.string().required().oneOf(TRANSFORMS),
  equals: yup
    .mixed()
    .test('scalar', '${path} must be a string, number or boolean', (v) => v === undefined || ['string', 'number', 'boolean'].includes(typeof v))
    .test(onlyForTransforms('flag')),
  range: yup
    .array(yup.number().required())
    .length(2, '${path} must be [from, to]')
    .when('transform', { is: (t: string) => t === 'ramp' || t === 'between', then: (s) => s.required('${path} is required for this transform') })
    .test(onlyForTransforms('ramp', 'between')),
  values: mapOf(() => yup.number().required().min(0).max(1))
    .when('transform', { is: 'map', then: (s) => s.required('${path} is required for transform map') })
    .test(onlyForTransforms('map')),
  missing: yup.number().min(0).max(1),
  weight: yup.number().required().min(0).max(100),
  reason: reasonCode,
  reasonAt: yup.number().min(0).max(1),
})
  // A transform that cannot read its fact's type, or an `equals` or `values` key the fact can never be (factTypes.ts).
  .test('fits-fact-type', 'fact type', function fits(spec) {
    if (!spec || typeof spec.fact !== 'string') return true;
    const errors = signalTypeProblems(spec as Parameters<typeof signalTypeProblems>[0]).map(({ at, message }) => {
      const path = this.path ? `${this.path}.${at}` : at;
      return this.createError({ path, message: asIs(`${path} ${message}`) });
    });
    return errors.length ? new yup.ValidationError(errors) : true;
  });

export const signalsFileSchema = strictObject({
  signals: mapOf(() => signalSchema, /^[a-z][a-z0-9_]{0,63}$/, 'is not a valid signal name (snake_case)').required(),
});

/** `value: { fact: <path> }` reads another fact when the rule runs. */
const factReference = strictObject({ fact: factPath });

const conditionLeaf = strictObject({
  fact: factPath,
  operator: yup
    .string()
    .required()
    .test('operator', '${path} must be a known operator, optionally with decorators (e.g. not:in, someFact:in)', (v) => !!v && parseOperator(v) !== undefined),
  value: yup.lazy((v) => (isFactReference(v) ? factReference : yup.mixed().test('defined', '${path} is required', (x) => x !== undefined))),
})
  // A value of the wrong shape would silently never match (`in: 3`, `in: "abc"`: lists.ts)
  // or never match (`exists: "yes"`), after a validate that passed. A value of the right shape may
  // still, for a fact of a type TPS knows, never be what it means (factTypes.ts).
  .test('value-fits-operator', 'value', function fits(leaf) {
    if (!leaf || typeof leaf.operator !== 'string' || leaf.value === undefined) return true;
    const shapeProblem = valueProblem(leaf.operator, leaf.value);
    if (shapeProblem) {
      const path = this.path ? `${this.path}.value` : 'value';
      return this.createError({ path, message: asIs(`${path} ${shapeProblem}`) });
    }
    if (typeof leaf.fact !== 'string') return true;
    const problem = factTypeProblem(leaf.fact, leaf.operator, leaf.value);
    if (!problem) return true;
    const path = this.path ? `${this.path}.${problem.at}` : problem.at;
    return this.createError({ path, message: asIs(`${path} ${problem.message}`) });
  });

// Conditions nest: {all: [...]}, {any: [...]}, {not: {...}} or a leaf.
export const conditionSchema: yup.Schema<unknown> = yup.lazy((value: unknown) => {
  if (value && typeof value === 'object' && !Array.isArray(value)) {
    if ('all' in value) return strictObject({ all: yup.array(conditionSchema).required().min(1) });
    if ('any' in value) return strictObject({ any: yup.array(conditionSchema).required().min(1) });
    if ('not' in value) return strictObject({ not: conditionSchema });
  }
  return conditionLeaf;
}) as unknown as yup.Schema<unknown>;

const redactionSchema = strictObject({
  fields: yup
    .array(yup.string().required().matches(/^[A-Za-z0-9_]+(\.[A-Za-z0-9_*]+)*$/, '${path} must be a dotted field path'))
    .required()
    .min(1, '${path} must name at least one field to redact'),
  strategy: yup.string().required().oneOf(REDACTION_STRATEGIES),
}).default(undefined);

// allow is what is answered when no rule fires, and every other decision outranks it: a rule that
// decided allow would override nothing, only add its reason when nothing else fired.
const RULE_DECISIONS: readonly string[] = DECISIONS.filter((d) => d !== 'allow');

/** A `then` field that only one decision uses: on a rule that decides another it would do nothing. */
const onlyFor = (decision: Decision) => ({
  name: 'only-for-decision',
  skipAbsent: true,
  test(this: yup.TestContext, v: unknown) {
    const decided = (this.parent as { decision?: string } | undefined)?.decision;
    if (decided === decision || !RULE_DECISIONS.includes(decided!)) return true;
    return this.createError({ message: `\${path} is only for decision ${decision}; this rule decides ${decided}` });
  },
});

const ruleSchema = strictObject({
  name: yup.string().required().matches(ID, '${path} must be lowercase letters, digits, - and _'),
  description: yup.string().max(500),
  when: conditionSchema,
  then: strictObject({
    decision: yup
      .string()
      .required()
      .oneOf(DECISIONS)
      .test('not-allow', '${path} cannot be allow: every other decision outranks it, so it would override nothing; a rule decides allow_redacted, step_up_required, throttle or deny', (v) => v !== 'allow'),
    reason: reasonCode.required(),
    challenge: yup.string().oneOf(CHALLENGE_TYPES).test(onlyFor('step_up_required')),
    redaction: redactionSchema
      .when('decision', {
        is: 'allow_redacted',
        then: (s) => s.required('${path} is required when decision is allow_redacted'),
      })
      .test(onlyFor('allow_redacted')),
    retryAfterSeconds: yup.number().integer().min(1).max(86_400).test(onlyFor('throttle')),
  }).required(),
});

export const policySchema = strictObject({
  id: yup.string().required().matches(ID, '${path} must be lowercase letters, digits, - and _'),
  description: yup.string().max(2000),
  thresholds: strictObject({
    medium: thresholdValue,
    high: thresholdValue,
    stepUp: thresholdValue,
    deny: thresholdValue,
  })
    .default(undefined)
    // Ordered as they will run: a threshold not written takes its default.
    .test('ordered', 'thresholds.medium must be below thresholds.high', function ordered(t) {
      if (!t) return true;
      const medium = t.medium ?? DEFAULT_THRESHOLDS.medium;
      const high = t.high ?? DEFAULT_THRESHOLDS.high;
      if (medium < high) return true;
      const shown = (name: string, v: number, written: boolean) => `thresholds.${name} (${v}${written ? '' : ', the default'})`;
      return this.createError({ message: `${shown('medium', medium, t.medium !== undefined)} must be below ${shown('high', high, t.high !== undefined)}` });
    })
    // At or above deny, a score step-up could never be asked: deny outranks it at every score.
    // (Only between values in range: one out of range has its own message.)
    .test('step-up-below-deny', 'thresholds.stepUp must be below thresholds.deny, or the score step-up can never be asked', (t) => !t || !inRange(t.stepUp) || !inRange(t.deny) || t.stepUp < t.deny),
  weights: mapOf(() => yup.number().required().min(0).max(100), /^[a-z][a-z0-9_]{0,63}$/, 'is not a valid signal name'),
  requireRoles: yup.array(yup.string().required().min(1).max(128)).min(1, '${path} must name at least one role').default(undefined),
  requireRecentHumanSignal: strictObject({
    maxAgeSeconds: yup.number().required().min(1),
    action: yup.string().oneOf(['step_up', 'deny']),
  }).default(undefined),
  stepUp: strictObject({ challenge: yup.string().required().oneOf(CHALLENGE_TYPES) }).default(undefined),
  throttle: strictObject({
    velocityWindowCount: yup.number().integer().min(0),
    serviceWindow: strictObject({ seconds: yup.number().integer().required().min(1).max(86_400), max: yup.number().integer().required().min(1) }).default(undefined),
    retryAfterSeconds: yup.number().integer().min(1).max(86_400),
  }).default(undefined),
  rules: yup.array(ruleSchema).default(undefined),
  mode: yup.string().oneOf(MODES),
  ai: aiSchema,
})
  // velocity.* is counted only for a policy with a serviceWindow: elsewhere it is absent, always.
  .test('velocity-needs-window', 'velocity', function counted(spec) {
    if (!spec || spec.throttle?.serviceWindow) return true;
    const errors = (spec.rules ?? []).flatMap((rule, i) =>
      factPathsOf(rule?.when, `rules[${i}].when`)
        .filter(({ fact }) => fact.split('.')[0] === 'velocity')
        .map(({ fact, path }) => this.createError({ path, message: asIs(`${path} reads ${fact}, which TPS counts only for a policy with throttle.serviceWindow: here it is always absent; add throttle.serviceWindow`) })),
    );
    return errors.length ? new yup.ValidationError(errors) : true;
  });

export type OperationSpec = yup.InferType<typeof operationSchema>;
export type SignalSpec = yup.InferType<typeof signalSchema>;
export type PolicySpec = yup.InferType<typeof policySchema>;
export type AiSpec = NonNullable<yup.InferType<typeof aiSchema>>;
export type RuleSpec = NonNullable<PolicySpec['rules']>[number];
export type ConditionSpec = { all: ConditionSpec[] } | { any: ConditionSpec[] } | { not: ConditionSpec } | { fact: string; operator: string; value: unknown };
