import { didYouMean } from '../lib/suggest.js';
import type { RuleOnlyFacts } from '../policy/run.js';
import type { Facts } from './facts.js';

// The fact paths signals and rules may name: README's "Facts" table lists exactly these
// (test/unit/readme.test.ts), and test/policy/fact-paths.test.ts holds them to what buildFacts builds.

type AllFacts = Facts & RuleOnlyFacts;

/** Roots whose leaves TPS builds: a path under one must name one of them. */
export const FACT_LEAVES = {
  operation: ['key', 'actionType', 'resourceType', 'sensitivity'],
  actor: ['id', 'authenticated', 'roles', 'trusted', 'sessionAgeMinutes'],
  resource: ['type', 'id', 'ownerId', 'classification', 'ownedByActor'],
  session: ['sessionId', 'tabId', 'isNewDevice', 'continuityStrength', 'humanSignalAgeSeconds', 'geoChanged', 'networkChanged'],
  metadata: ['requestedCount', 'velocityWindowCount', 'changedFields', 'resourceCount', 'abnormalSequence', 'objectAccessRare', 'suspiciousTimeWindow', 'localHour', 'hasProofToken'],
  velocity: ['serviceCount'],
  risk: ['score', 'band', 'base'],
} as const satisfies { [R in keyof AllFacts]?: readonly (keyof AllFacts[R])[] };

/** The dotted path of a fact a fixed root's leaf names. */
export type KnownFactPath = { [R in keyof typeof FACT_LEAVES]: `${R}.${(typeof FACT_LEAVES)[R][number]}` }[keyof typeof FACT_LEAVES];

/**
 * What a fact's value is, as buildFacts (facts.ts) and the evaluator build it, for validation to
 * refuse a condition that could never match it (src/policy/factTypes.ts). `list`: a list of
 * strings. `lowerCased`: a string TPS lower-cases (or that only ever has lower-case values).
 * `always`: present on every request; else it may be absent.
 */
export interface FactType {
  kind: 'list' | 'string' | 'number' | 'boolean';
  lowerCased?: true;
  always?: true;
}

const LIST = { kind: 'list', always: true } as const;
const STRING = { kind: 'string' } as const;
const NUMBER = { kind: 'number' } as const;
const BOOLEAN = { kind: 'boolean' } as const;
const ALWAYS = { always: true } as const;
const LOWER = { lowerCased: true } as const;

const FACT_TYPES: { readonly [P in KnownFactPath]: FactType } = {
  // operations/*.yaml: a key and its enums are lower-case by schema (src/policy/schema.ts).
  'operation.key': { ...STRING, ...LOWER, ...ALWAYS },
  'operation.actionType': { ...STRING, ...LOWER, ...ALWAYS },
  'operation.resourceType': { ...STRING, ...ALWAYS },
  'operation.sensitivity': { ...STRING, ...LOWER, ...ALWAYS },
  'actor.id': { ...STRING, ...ALWAYS },
  'actor.authenticated': BOOLEAN,
  'actor.roles': LIST,
  'actor.trusted': BOOLEAN,
  'actor.sessionAgeMinutes': NUMBER,
  'resource.type': { ...STRING, ...ALWAYS },
  'resource.id': { ...STRING, ...ALWAYS },
  'resource.ownerId': STRING,
  'resource.classification': { ...STRING, ...LOWER },
  'resource.ownedByActor': BOOLEAN,
  'session.sessionId': STRING,
  'session.tabId': STRING,
  'session.isNewDevice': BOOLEAN,
  'session.continuityStrength': NUMBER,
  'session.humanSignalAgeSeconds': NUMBER,
  'session.geoChanged': BOOLEAN,
  'session.networkChanged': BOOLEAN,
  'metadata.requestedCount': { ...NUMBER, ...ALWAYS },
  'metadata.velocityWindowCount': NUMBER,
  'metadata.changedFields': LIST,
  'metadata.resourceCount': NUMBER,
  'metadata.abnormalSequence': BOOLEAN,
  'metadata.objectAccessRare': BOOLEAN,
  'metadata.suspiciousTimeWindow': BOOLEAN,
  'metadata.localHour': NUMBER,
  'metadata.hasProofToken': { ...BOOLEAN, ...ALWAYS },
  // Counted only for a policy with throttle.serviceWindow (schema.ts refuses it elsewhere), then always.
  'velocity.serviceCount': NUMBER,
  'risk.score': { ...NUMBER, ...ALWAYS },
  'risk.band': { ...STRING, ...LOWER, ...ALWAYS },
  'risk.base': { ...NUMBER, ...ALWAYS },
};

export const factType = (path: string): FactType | undefined => (Object.hasOwn(FACT_TYPES, path) ? FACT_TYPES[path as KnownFactPath] : undefined);

/** Roots whose keys the caller chooses (requestData, rawSignals): any path under them is a fact. */
export const OPEN_FACT_ROOTS = ['requestData', 'rawSignals'] as const satisfies readonly (keyof Facts)[];

/** velocity.* is counted after scoring and risk.* is the score itself: rules may read them, signals would read them absent. */
export const RULE_ONLY_ROOTS = ['velocity', 'risk'] as const satisfies readonly (keyof RuleOnlyFacts)[];

export const FACT_ROOTS: readonly string[] = [...Object.keys(FACT_LEAVES), ...OPEN_FACT_ROOTS];

/** Every path under a root with fixed leaves, as `root.leaf`. */
export const KNOWN_FACT_PATHS: readonly string[] = Object.entries(FACT_LEAVES).flatMap(([root, leaves]) => leaves.map((leaf) => `${root}.${leaf}`));

const known = new Set(KNOWN_FACT_PATHS);
const isLeafRoot = (root: string): root is keyof typeof FACT_LEAVES => Object.hasOwn(FACT_LEAVES, root);

/**
 * What is wrong with a fact path, to follow the YAML path that names it, or undefined. A typo in a
 * fixed root's leaf would otherwise read absent on every request: the rule never fires (or, with
 * `exists: false`, always does).
 */
export function factPathProblem(path: string): string | undefined {
  const [root, ...rest] = path.split('.');
  if (!FACT_ROOTS.includes(root!) || rest.some((p) => p.length === 0)) return `must be a dotted path whose first part is one of: ${FACT_ROOTS.join(', ')}`;
  if (!isLeafRoot(root!) || known.has(path)) return undefined;
  const hint = didYouMean(path, KNOWN_FACT_PATHS);
  return `names no fact "${path}"${hint || `; the facts under ${root} are: ${FACT_LEAVES[root].join(', ')}`}`;
}
