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
