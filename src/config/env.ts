// Environment variables (CONTRACT "Running"), read once. Defaults serve a first run with no set-up.

export interface Settings {
  port: number;
  host: string;
  databaseUrl: string | undefined;
  redisUrl: string | undefined;
  configDir: string;
  environment: string;
  secretKey: string | undefined;
  publishableKey: string | undefined;
  maxBodyBytes: number;
  logLevel: string;
  challengeTtlSeconds: number;
  keyRateLimitPerMinute: number;
  keyCacheMs: number;
  workers: number;
  commitMaxBatch: number;
  commitMaxDelayMs: number;
  ai: { url?: string; model?: string; apiKey?: string; timeoutMs?: number };
}

type Env = Record<string, string | undefined>;

function int(env: Env, name: string, fallback: number, min = 0): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min) throw new Error(`${name} must be an integer >= ${min}, got "${raw}"`);
  return value;
}

function str(env: Env, name: string): string | undefined {
  const raw = env[name];
  return raw === undefined || raw === '' ? undefined : raw;
}

export function readSettings(env: Env = process.env): Settings {
  const aiTimeout = str(env, 'TPS_AI_TIMEOUT_MS');
  return {
    port: int(env, 'PORT', 8787),
    host: str(env, 'HOST') ?? '0.0.0.0',
    databaseUrl: str(env, 'DATABASE_URL'),
    redisUrl: str(env, 'REDIS_URL'),
    configDir: str(env, 'TPS_CONFIG_DIR') ?? '.',
    environment: str(env, 'TPS_ENVIRONMENT') ?? 'development',
    secretKey: str(env, 'TPS_SECRET_KEY'),
    publishableKey: str(env, 'TPS_PUBLISHABLE_KEY'),
    maxBodyBytes: int(env, 'TPS_MAX_BODY_BYTES', 65536, 1),
    logLevel: str(env, 'LOG_LEVEL') ?? 'info',
    challengeTtlSeconds: int(env, 'TPS_CHALLENGE_TTL_SECONDS', 600, 1),
    keyRateLimitPerMinute: int(env, 'TPS_KEY_RATE_LIMIT_PER_MINUTE', 0),
    keyCacheMs: int(env, 'TPS_KEY_CACHE_MS', 1000),
    workers: int(env, 'TPS_WORKERS', 1, 1),
    commitMaxBatch: int(env, 'TPS_COMMIT_MAX_BATCH', 256, 1),
    commitMaxDelayMs: int(env, 'TPS_COMMIT_MAX_DELAY_MS', 2),
    ai: {
      url: str(env, 'TPS_AI_URL'),
      model: str(env, 'TPS_AI_MODEL'),
      apiKey: str(env, 'TPS_AI_API_KEY'),
      timeoutMs: aiTimeout === undefined ? undefined : int(env, 'TPS_AI_TIMEOUT_MS', 300, 1),
    },
  };
}
