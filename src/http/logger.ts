import { pino, type Logger } from 'pino';

// Payload values never reach the logs: only ids of requests, keys and events, and error codes.
export function createLogger(level: string): Logger {
  return pino({
    level,
    base: { service: 'tps' },
    redact: { paths: ['authorization', '*.authorization', 'secretKey', '*.secretKey', 'key', '*.key'], censor: '[redacted]' },
  });
}
export type { Logger };

/**
 * An error as it may be logged. Database drivers put the failed SQL, values included, in front of
 * their message ("insert into … values (…) - no such table"); only the part after it is kept.
 */
export function safeError(err: unknown): { name: string; code?: string; message: string; stack?: string };
/**
 * message: false keeps the error's name and code only (its cause's too): for errors whose message
 * may quote what they were given (fetch's quotes a URL, user:password included, and a bad header's value).
 */
export function safeError(err: unknown, options: { message: false }): ErrorKind;
export function safeError(err: unknown, options?: { message: false }): ErrorKind | { name: string; code?: string; message: string; stack?: string } {
  if (options?.message === false) return errorKind(err, true);
  const e = err as { name?: string; code?: unknown; message?: unknown; stack?: unknown } | undefined;
  const message = String(e?.message ?? err).split(' - ').pop()!.slice(0, 300);
  const fromDriver = typeof e?.code === 'string' || String(e?.message ?? '').includes(' - ');
  return {
    name: e?.name ?? 'Error',
    ...(typeof e?.code === 'string' ? { code: e.code } : {}),
    message,
    // A driver's stack repeats its message; ours are kept for bugs (they hold code locations only).
    ...(!fromDriver && typeof e?.stack === 'string' ? { stack: e.stack.split('\n').slice(1, 8).join('\n') } : {}),
  };
}

export interface ErrorKind {
  name: string;
  code?: string;
  cause?: ErrorKind;
}

function errorKind(err: unknown, withCause: boolean): ErrorKind {
  const e = err as { name?: unknown; code?: unknown; cause?: unknown } | undefined;
  return {
    name: typeof e?.name === 'string' ? e.name : 'Error',
    ...(typeof e?.code === 'string' ? { code: e.code } : {}),
    // fetch's "fetch failed" says why only in its cause's code (ECONNREFUSED, UND_ERR_CONNECT_TIMEOUT…).
    ...(withCause && e?.cause instanceof Error ? { cause: errorKind(e.cause, false) } : {}),
  };
}
