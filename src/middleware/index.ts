// Decision middleware for Koa, Express and fetch-style handlers, plus the redaction helper.

export { tpsKoa, type KoaDecisionOptions } from './koa.js';
export { tpsExpress, type ExpressDecisionOptions, type ExpressLikeRequest, type ExpressLikeResponse, type ExpressLikeNext } from './express.js';
export { tpsFetch, decisionOf, type FetchDecisionOptions } from './fetch.js';
export { decide, type DecisionOptions, type RequestView, type Verifier, type VerifyContext } from './core.js';
export { toOutcome, DEFAULT_STEP_UP_STATUS, DEFAULT_RETRY_AFTER_SECONDS, type Outcome, type Continue, type Halt, type HaltBody } from './outcome.js';
export { applyRedaction, type RedactOptions } from './redaction.js';
export { sessionFromHeaders, parseContinuity } from './session-headers.js';
export { HEADERS } from '../browser/headers.js';
