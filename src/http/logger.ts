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
