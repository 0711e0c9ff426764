// Framework-neutral heart of the decision middleware: build the transaction, verify a carried
// challenge proof, evaluate, and map the decision to an Outcome. It never throws: any failure
// becomes a halting Outcome, so an adapter cannot fall through to the protected handler.

import type { Actor, ChallengeType, EvaluateRequest, Resource, SessionContext } from '../api/types.js';
import { HEADERS } from '../browser/headers.js';
import type { Evaluation, TpsClient } from '../client/index.js';
import { syntheticFailure } from '../client/synthetic.js';
import { chooseOperationKey, unknownHeaderKey, type OperationKeyOption } from './operation-key.js';
import { DEFAULT_STEP_UP_STATUS, halt, toOutcome, type Halt, type Outcome } from './outcome.js';
import { resourceId, safeId, safeIp, sessionFromHeaders } from './session-headers.js';

/**
 * What an adapter exposes of its framework's request. `ip` and `user` are read at most once, inside
 * decide's protected section, so an adapter may make them getters over app code that can throw.
 */
export interface RequestView {
  path: string;
  header(name: string): string | undefined;
  ip?: string;
  /** The signed-in user, when the framework has one (ctx.state.user, req.user); a promise is awaited. */
  user?: unknown;
  /** A route parameter `id`, when present: the default resource id. */
  resourceId?: string;
}

export interface VerifyContext<R> {
  request: R;
  /** The challenge the proof answers (x-svc-challenge-id), when the browser sent it. */
  challengeId: string | undefined;
  transaction: EvaluateRequest;
}

export type MaybePromise<T> = T | Promise<T>;
export type Verifier<R> = (proof: string, context: VerifyContext<R>) => MaybePromise<boolean>;

export interface DecisionOptions<R> {
  client: Pick<TpsClient, 'evaluate'>;
  /**
   * The protected operation. Unset: the x-svc-operation-key header (prefer fixing it per route); a
   * malformed or unknown header is the browser's 400, while a key set here that TPS does not know is
   * a 503 and onError. A function that returns nothing halts with 400 missing_operation_key; the
   * header is not consulted.
   */
  operationKey?: OperationKeyOption<R>;
  /** Default: the framework's user ({ id, role, roles }) as an authenticated actor, else anonymous. */
  actor?: (request: R) => MaybePromise<Actor>;
  /** Default: { type: the operation key's first segment, id: route param `id` or the path }. */
  resource?: (request: R) => MaybePromise<Resource>;
  /** Default: the x-svc-* continuity headers plus the request's IP and User-Agent. */
  session?: (request: R) => MaybePromise<SessionContext | undefined>;
  /** Last word on the transaction: receives the defaults built from the options above. */
  transaction?: (request: R, defaults: EvaluateRequest) => MaybePromise<EvaluateRequest>;
  /** Checks an x-svc-proof-token; true = passed. A throw counts as failed. */
  verifyProofToken?: Verifier<R>;
  /** Checks an x-svc-passkey-assertion; true = passed. A throw counts as failed. */
  verifyPasskey?: Verifier<R>;
  /** Status of the step-up answer. Default 428. */
  stepUpStatus?: number;
  /** Told about failures that made the middleware fail closed, a verifier throw, and any TPS outage the client stood in for (failureMode open included). */
  onError?: (error: unknown, request: R) => void;
}

function defaultActor(user: unknown): Actor {
  const u = user as { id?: unknown; role?: unknown; roles?: unknown } | undefined;
  if (u && (typeof u.id === 'string' || typeof u.id === 'number')) {
    const actor: Actor = { id: String(u.id), authenticated: true };
    if (typeof u.role === 'string') actor.role = u.role;
    if (Array.isArray(u.roles)) actor.roles = u.roles.filter((r): r is string => typeof r === 'string');
    return actor;
  }
  return { id: 'anonymous', authenticated: false };
}

async function buildTransaction<R>(request: R, view: RequestView, options: DecisionOptions<R>, operationKey: string): Promise<EvaluateRequest> {
  let session = options.session ? await options.session(request) : undefined;
  if (!options.session) {
    session = sessionFromHeaders((name) => view.header(name));
    const userAgent = view.header('user-agent');
    const ip = safeIp(view.ip);
    if (ip) session.ipAddress = ip;
    if (userAgent) session.userAgent = userAgent.slice(0, 512);
  }
  const defaults: EvaluateRequest = {
    operationKey,
    // Awaited: an async auth() must not read as anonymous (wrong roles, lumped velocity, wrong logs).
    actor: options.actor ? await options.actor(request) : defaultActor(await view.user),
    resource: options.resource ? await options.resource(request) : { type: operationKey.split('.')[0]!, id: await resourceId(view.resourceId ?? view.path) },
  };
  if (session && Object.keys(session).length > 0) defaults.session = session;
  return options.transaction ? options.transaction(request, defaults) : defaults;
}

/** The proof the request carries, if a verifier for it is configured. Passkey is preferred. */
function carriedProof<R>(view: RequestView, options: DecisionOptions<R>): { type: ChallengeType; proof: string; verify: Verifier<R> } | undefined {
  const assertion = view.header(HEADERS.passkeyAssertion);
  if (assertion && options.verifyPasskey) return { type: 'passkey', proof: assertion, verify: options.verifyPasskey };
  const token = view.header(HEADERS.proofToken);
  if (token && options.verifyProofToken) return { type: 'proof_token', proof: token, verify: options.verifyProofToken };
  return undefined;
}

/** A throwing onError must not turn a fail-closed answer into an unhandled rejection. */
export function report<R>(options: DecisionOptions<R>, error: unknown, request: R): void {
  try {
    options.onError?.(error, request);
  } catch {
    // Nothing more useful to do: the request is being halted anyway.
  }
}

function unavailable(refs: { evaluation?: Evaluation; transaction?: EvaluateRequest } = {}): Halt {
  return halt('block', 503, 'protection_unavailable', 'This action cannot be checked right now; retry later.', refs);
}

export async function decide<R>(request: R, view: RequestView, options: DecisionOptions<R>): Promise<Outcome> {
  try {
    const chosen = chooseOperationKey(request, (name) => view.header(name), options.operationKey);
    if ('action' in chosen) return chosen;

    let transaction = await buildTransaction(request, view, options, chosen.key);
    const carried = carriedProof(view, options);
    if (carried) {
      // SPEC §3 rule 2: verify the proof ourselves, then re-send the transaction with the result.
      const challengeId = safeId(view.header(HEADERS.challengeId));
      let passed = false;
      try {
        passed = (await carried.verify(carried.proof, { request, challengeId, transaction })) === true;
      } catch (err) {
        report(options, err, request);
      }
      transaction = { ...transaction, challengeResult: { type: carried.type, passed, ...(challengeId ? { challengeId } : {}) } };
    }
    let evaluation: Evaluation;
    try {
      evaluation = await options.client.evaluate(transaction);
    } catch (err) {
      // The browser's mistake is a 400 without onError; anything else is the 503 below.
      const refused = unknownHeaderKey(err, chosen, transaction);
      if (refused) return refused;
      throw err;
    }
    // TPS gave no answer and the client stood in (failureMode open or closed): an outage is loud
    // either way, and a closed stand-in is "cannot check now", not a denial of this request.
    const failure = syntheticFailure(evaluation);
    if (failure) {
      report(options, failure, request);
      if (evaluation.decision !== 'allow') return unavailable({ evaluation, transaction });
    }
    return toOutcome(evaluation, transaction, options.stepUpStatus ?? DEFAULT_STEP_UP_STATUS);
  } catch (err) {
    report(options, err, request);
    return unavailable();
  }
}
