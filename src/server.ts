import { createTps } from './app.js';
import { readSettings } from './config/env.js';
import { createLogger } from './http/logger.js';
import { ConfigError } from './policy/problems.js';

/** `npm start`: one TPS process on PORT, with the store and configuration of the environment. */
async function main(): Promise<void> {
  const settings = readSettings();
  const logger = createLogger(settings.logLevel);
  let tps;
  try {
    tps = await createTps(settings, { logger });
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`TPS did not start: ${err.message}\n`);
      process.exit(1);
    }
    throw err;
  }
  if (tps.firstKeys) {
    // Printed once, to the terminal rather than the log: the log never holds a secret.
    process.stdout.write(
      [
        '',
        `TPS created the environment "${tps.firstKeys.environment}" and its keys. They are shown only now; store them safely.`,
        `  secret key (server side only): ${tps.firstKeys.secretKey}`,
        `  publishable key (browser):     ${tps.firstKeys.publishableKey}`,
        '',
        '',
      ].join('\n'),
    );
  }
  const { url } = await tps.listen();
  logger.info({ url, store: tps.db.describe, configVersion: tps.config.current().versionId }, 'TPS listening');

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'TPS stopping');
    await tps.close();
    process.exit(0);
  };
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));
}

main().catch((err) => {
  process.stderr.write(`TPS failed to start: ${(err as Error).message}\n`);
  process.exit(1);
});
