import type { Redis } from 'ioredis';
import { safeError, type Logger } from '../http/logger.js';

/**
 * A Redis connection's errors, through the service's logger: one line when an outage begins and one
 * when the connection is ready again, rather than ioredis's own stack trace on stderr at every
 * reconnection attempt (what it prints when no one listens). The requests it fails meanwhile are
 * logged each with its own id (middleware.ts). The URL is never logged; its password, if an error
 * ever quoted it, is cut out.
 */
export function reportOutages(redis: Redis, url: string, logger: Logger | undefined): void {
  const secrets = passwordsOf(url);
  const scrub = (text: string) => secrets.reduce((t, secret) => t.split(secret).join('[redacted]'), text);
  let down = false;
  redis.on('error', (err: unknown) => {
    if (down) return;
    down = true;
    const e = safeError(err);
    logger?.error({ err: { ...e, message: scrub(e.message), ...(e.stack ? { stack: scrub(e.stack) } : {}) } }, 'shared state (Redis) unreachable; reconnecting');
  });
  redis.on('ready', () => {
    if (!down) return;
    down = false;
    logger?.info('shared state (Redis) reachable again');
  });
}

/** The URL's password as written and as decoded (what a client sends). */
function passwordsOf(url: string): string[] {
  try {
    const { password } = new URL(url);
    return password ? [...new Set([password, decodeURIComponent(password)])] : [];
  } catch {
    return [];
  }
}
