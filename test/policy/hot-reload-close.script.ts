// Run by hot-reload-close.test.ts in a process of its own: a service embedded as startTps runs it
// is closed while a watched reload waits (10 minutes) for the files to settle; then the process is
// left to end by itself. Prints "closed", and "while settling" once the wait was seen to begin.
import { tempConfig } from '../helpers/config.js';
import { capturedLogs, startTps } from '../helpers/tps.js';

const cfg = tempConfig({ fixtures: false });
const { logger, lines } = capturedLogs('debug');
const tps = await startTps({ configDir: cfg.dir, logger, env: { TPS_WATCH_CONFIG: 'true', TPS_WATCH_DEBOUNCE_MS: '20', TPS_WATCH_SETTLE_MS: '600000' } });
cfg.replace('rules/payments.yaml', 'value: 10000', 'value: 5000');
const settling = () => lines.some((l) => l.includes('waiting for them to settle'));
// A watcher that does not say so has begun its wait well within 3 s of a 20 ms debounce.
for (const deadline = Date.now() + 3000; Date.now() < deadline && !settling(); ) await new Promise((r) => setTimeout(r, 20));
const seen = settling();
await tps.close();
cfg.cleanup();
process.stdout.write(`closed${seen ? ' while settling' : ''}\n`);
