// Fetch-style adapter (Workers, Deno, Bun, Hono, Next route handlers): `guard(request)` answers
// a Response when the request must stop, or null to continue. The continue decision (redaction
// included) is then available through decisionOf(request).

import { decide, type DecisionOptions, type MaybePromise } from './core.js';
import type { Continue } from './outcome.js';

export interface FetchDecisionOptions extends DecisionOptions<Request> {
  /** The client IP, which only the platform knows (e.g. cf-connecting-ip). */
  ip?: (request: Request) => string | undefined;
  /** The signed-in user for the default actor; may be async (e.g. Next's auth()). */
  user?: (request: Request) => MaybePromise<unknown>;
}

const decisions = new WeakMap<Request, Continue>();

/** The continue decision of a request the guard let through, for redaction or logging. */
export function decisionOf(request: Request): Continue | undefined {
  return decisions.get(request);
}

export function tpsFetch(options: FetchDecisionOptions): (request: Request) => Promise<Response | null> {
  return async (request) => {
    const outcome = await decide(request, {
      path: new URL(request.url).pathname,
      header: (name) => request.headers.get(name) ?? undefined,
      // Getters, so the app's callbacks run inside decide: a throw is a 503 and onError, not a rejected guard.
      get ip() {
        return options.ip?.(request);
      },
      get user() {
        return options.user?.(request);
      },
    }, options);
    if (outcome.action === 'continue') {
      decisions.set(request, outcome);
      return null;
    }
    return new Response(JSON.stringify(outcome.body), {
      status: outcome.status,
      headers: { ...outcome.headers, 'content-type': 'application/json; charset=utf-8' },
    });
  };
}
