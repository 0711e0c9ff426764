import test from 'ava';
import { startScript } from '../helpers/script.js';

// A watched reload waits TPS_WATCH_SETTLE_MS for the files to stay as read. close() must end that
// wait: its timer kept a closing process (a service embedded, a test's) alive until it was over.

test('a service closed while a watched reload waits for the files to settle lets its process end then, not once the wait is over', async (t) => {
  const script = startScript('test/policy/hot-reload-close.script.ts');
  t.teardown(() => void script.stop('SIGKILL'));
  await script.logged(/^closed/m);
  // The wait is 10 minutes: a process still there 30 s after close() is held by it.
  let timer: NodeJS.Timeout | undefined;
  const exit = await Promise.race([script.exited, new Promise((r) => (timer = setTimeout(r, 30_000, 'still running 30 s after close()')))]);
  clearTimeout(timer);
  t.deepEqual(exit, { code: 0, signal: null }, script.stderr);
  t.regex(script.stdout, /^closed while settling$/m, 'the reload was waiting for the files to settle when the service closed');
});
