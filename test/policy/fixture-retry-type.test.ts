import test from 'ava';
import { tempConfig } from '../helpers/config.js';
import { runScript } from '../helpers/script.js';
import { paymentsFixtures } from '../helpers/fixtureYaml.js';

// A fixture's requests are validated with the evaluate endpoint's own schema: a passed challenge
// result names its type. `retry: true` and `retry: { passed: true }` take the type the step before
// them expects to be asked for; where that step asks for none, or for one of several, the retry is
// a located problem. Run as a user runs it: `tps test` (bin/tps.js, a process of its own).


const large = `      - base: finance
        request: { requestData: { amount: 15000 } }`;

const tpsTest = (dir: string) => runScript('bin/tps.js', { LOG_LEVEL: 'silent' }, ['test', dir]);

test('tps test fills a passed retry with the challenge type its step expects, and locates a retry that cannot name one', async (t) => {
  const cfg = tempConfig({ fixtures: false });
  t.teardown(cfg.cleanup);

  // The type comes from the step before: its expect.challenge, or the one its policy asks (pii-read: passkey).
  cfg.write(
    'rules/payments.fixtures.yaml',
    paymentsFixtures(`
  - name: retry true after a proof token was asked
    steps:
${large}
        expect: { decision: step_up_required, challenge: proof_token }
      - retry: true
        expect: { decision: allow, reasons: { includes: [challenge_satisfied] } }
`),
  );
  cfg.write(
    'rules/pii-read.fixtures.yaml',
    `
operation: customer.read_pii
cases:
  - name: passed retry after a step-up of a policy that asks one type
    steps:
      - request:
          actor: { id: sup-1, authenticated: true, roles: [support] }
          resource: { type: customer, id: cus-1, classification: PII }
          session: { sessionId: s-1, continuityStrength: 0.95, recentHumanSignalAgeSeconds: 5 }
          requestData: { requestedCount: 500 }
        expect: { decision: step_up_required }
      - retry: { passed: true }
        expect: { decision: allow_redacted, reasons: { includes: [challenge_satisfied] } }
`,
  );
  const passing = await tpsTest(cfg.dir);
  t.is(passing.code, 0, passing.stdout + passing.stderr);
  t.regex(passing.stdout, /2 passed, 0 failed/);

  // A step that asks for no challenge, a step of a policy that asks for either type, and a request
  // that reports passing without naming what: each a problem at its own path.
  cfg.remove('rules/pii-read.fixtures.yaml');
  cfg.write(
    'rules/payments.fixtures.yaml',
    paymentsFixtures(`
  - name: retry after an allow
    steps:
      - base: finance
        expect: { decision: allow }
      - retry: true
        expect: { decision: step_up_required }
  - name: retry after a step-up of either type
    steps:
${large}
        expect: { decision: step_up_required }
      - retry: { passed: true }
        expect: { decision: allow }
  - name: an untyped passed result in a request
    base: finance
    request: { challengeResult: { passed: true } }
    expect: { decision: step_up_required }
`),
  );
  const failing = await tpsTest(cfg.dir);
  t.is(failing.code, 1, failing.stdout + failing.stderr);
  const out = failing.stdout + failing.stderr;
  t.regex(out, /3 problems/);
  t.regex(out, /cases\[0\]\.steps\[1\]\.retry: a passed retry names the challenge it passed, and the step before it asks for none \(it expects allow\)/);
  t.regex(out, /cases\[1\]\.steps\[1\]\.retry: the step before it may be asked for passkey or proof_token/);
  t.regex(out, /cases\[2\]\.request: the request is not a valid evaluate request: challengeResult\.type is required when challengeResult\.passed is true/);
});
