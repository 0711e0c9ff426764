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
export function safeError(err: unknown): { name: string; code?: string; message: string; stack?: string } {
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
