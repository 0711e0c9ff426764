// Koa adapter. A halt answers the request and never calls next(); a continue calls the handler
// and, for allow_redacted, redacts ctx.body after it (koa-body.ts), refusing with a 500 a body it
// cannot read. Either way the Outcome is left on ctx.state.tps, so an outer middleware can log it
// (check `action` before trusting it).

import type { Context, Middleware } from 'koa';
import { decide, report, type DecisionOptions } from './core.js';
import { redactKoaBody } from './koa-body.js';
import { halt } from './outcome.js';
import type { RedactOptions } from './redaction.js';

export interface KoaDecisionOptions extends DecisionOptions<Context> {
  /**
   * Options for redacting ctx.body after the handler, or false to leave it to the handler (which
   * must then redact through ctx.state.tps.redact, e.g. before streaming).
   */
  redact?: RedactOptions | false;
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
    const redactOptions = options.redact;
    if (!outcome.redaction || redactOptions === false) return next();
    try {
      await next();
    } catch (err) {
      // An outer middleware may turn the throw into an answer that keeps ctx.body: the handler's
      // unredacted data must not be it.
      ctx.body = null;
      throw err;
    }
    const unreadable = redactKoaBody(ctx, (data) => outcome.redact(data, redactOptions));
    if (unreadable === undefined) return;
    report(options, new Error(`TPS: allow_redacted, but the response body is ${unreadable}, which the middleware cannot redact; redact it in the handler (ctx.state.tps.redact) and set redact: false on this route`), ctx);
    if (ctx.respond === false) {
      // The app writes ctx.res itself, now or later: stop it (a late write to a destroyed response
      // fails quietly, where one after our own answer would emit an error nobody listens to).
      // What it already sent cannot be recalled.
      if (!ctx.res.writableEnded) ctx.res.destroy();
      return;
    }
    const refused = halt('block', 500, 'redaction_unavailable', 'This answer could not be redacted as required.');
    ctx.status = refused.status;
    ctx.set(refused.headers);
    ctx.body = refused.body;
  };
}
