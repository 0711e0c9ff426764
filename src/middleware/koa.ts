// Koa adapter. A halt answers the request and never calls next(); a continue calls the handler
// and, for allow_redacted, redacts a JSON (object) ctx.body after it. Either way the Outcome is
// left on ctx.state.tps, so an outer middleware can log it (check `action` before trusting it).

import type { Context, Middleware } from 'koa';
import { decide, type DecisionOptions } from './core.js';
import type { RedactOptions } from './redaction.js';

export interface KoaDecisionOptions extends DecisionOptions<Context> {
  /** Options for redacting ctx.body after the handler, or false to leave it to the handler. */
  redact?: RedactOptions | false;
}

export function isJsonBody(body: unknown): body is object {
  if (typeof body !== 'object' || body === null) return false;
  if (body instanceof Uint8Array || typeof (body as { pipe?: unknown }).pipe === 'function') return false;
  return typeof (body as { getReader?: unknown }).getReader !== 'function';
}

export function tpsKoa(options: KoaDecisionOptions): Middleware {
  return async (ctx, next) => {
    const params = (ctx as Context & { params?: Record<string, string> }).params;
    const outcome = await decide(ctx, {
      path: ctx.path,
      header: (name) => ctx.get(name) || undefined,
      // Getters, read inside decide's protected section; a user that is a promise is awaited there.
      get ip() {
        return ctx.ip;
      },
      get user() {
        return ctx.state.user;
      },
      resourceId: params?.id,
    }, options);
    ctx.state.tps = outcome;
    if (outcome.action !== 'continue') {
      ctx.status = outcome.status;
      ctx.set(outcome.headers);
      ctx.body = outcome.body;
      return;
    }
    await next();
    if (outcome.redaction && options.redact !== false && isJsonBody(ctx.body)) {
      ctx.body = outcome.redact(ctx.body, options.redact ?? {});
    }
  };
}
