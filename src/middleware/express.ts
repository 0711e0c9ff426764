// Express adapter, typed structurally so the package does not depend on @types/express.
// A halt answers and never calls next(); a continue calls next() and, for allow_redacted,
// redacts whatever the handler sends through res.json or res.jsonp (res.send(object) goes through
// res.json). A string, a Buffer, res.write or res.render is not seen. Either way the Outcome is
// left on res.locals.tps for logging (check `action` before trusting it).

import { decide, type DecisionOptions } from './core.js';
import type { RedactOptions } from './redaction.js';

export interface ExpressLikeRequest {
  path: string;
  ip?: string;
  params?: Record<string, string>;
  user?: unknown;
  get(name: string): string | undefined;
}

export interface ExpressLikeResponse {
  locals: Record<string, unknown>;
  status(code: number): this;
  set(headers: Record<string, string>): this;
  json(body: unknown): this;
  jsonp?(body: unknown): this;
}

export type ExpressLikeNext = (error?: unknown) => void;

export interface ExpressDecisionOptions<Req extends ExpressLikeRequest = ExpressLikeRequest> extends DecisionOptions<Req> {
  /** Options for redacting res.json and res.jsonp bodies, or false to leave it to the handler. */
  redact?: RedactOptions | false;
}

export function tpsExpress<Req extends ExpressLikeRequest = ExpressLikeRequest, Res extends ExpressLikeResponse = ExpressLikeResponse>(
  options: ExpressDecisionOptions<Req>,
): (req: Req, res: Res, next: ExpressLikeNext) => Promise<void> {
  return async (req, res, next) => {
    const outcome = await decide(req, {
      path: req.path,
      header: (name) => req.get(name) || undefined,
      // Getters, read inside decide's protected section (req.ip runs the app's trust proxy function);
      // a user that is a promise is awaited there.
      get ip() {
        return req.ip;
      },
      get user() {
        return req.user;
      },
      resourceId: req.params?.id,
    }, options);
    res.locals.tps = outcome;
    if (outcome.action !== 'continue') {
      res.status(outcome.status).set(outcome.headers).json(outcome.body);
      return;
    }
    if (outcome.redaction && options.redact !== false) {
      const redactOptions = options.redact ?? {};
      // jsonp serializes on its own rather than through res.json, so it is wrapped too.
      for (const method of ['json', 'jsonp'] as const) {
        const send = res[method]?.bind(res);
        if (send) res[method] = (body: unknown) => send(outcome.redact(body, redactOptions));
      }
    }
    next();
  };
}
