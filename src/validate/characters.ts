// What the store can hold, for the validators and for the middleware, which must not load yup.
// Strings reach the store's text columns and the group commit's single jsonb parameter on
// PostgreSQL, which refuses NUL and unpaired surrogates and with them the whole batch. Identifiers
// refuse every control character (C0, DEL, C1) too; free text only what the store cannot hold.

export const CONTROL_OR_LONE_SURROGATE = /[\p{Cc}\p{Cs}]/u;
export const NUL_OR_LONE_SURROGATE = /[\u0000\p{Cs}]/u;
/** The longest identifier (actor.id, resource.id, …) evaluate and ingest take. */
export const MAX_ID_LENGTH = 256;
/** The longest operationKey: evaluate, ingest, the Decision Logs' filter and the middleware's header check. */
export const MAX_OPERATION_KEY_LENGTH = 128;
/** A reason code or a normalized signal's name: ingest's reasonCodes and normalizedSignals, the Decision Logs' `reason`. */
export const CODE = /^[A-Za-z0-9_.:-]{1,128}$/;
