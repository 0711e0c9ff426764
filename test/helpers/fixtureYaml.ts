/**
 * A fixtures file for payment_transaction.create: a `finance` base paying `amount` EUR, then
 * `cases`, YAML list items indented two spaces. The first case's `- name:` is on line 9.
 */
export const paymentsFixtures = (cases: string, amount = 250): string => `operation: payment_transaction.create
bases:
  finance:
    actor: { id: fin-1, authenticated: true, roles: [finance] }
    resource: { type: payment_method, id: pm-1 }
    session: { sessionId: s-1, continuityStrength: 0.95, recentHumanSignalAgeSeconds: 5 }
    requestData: { amount: ${amount}, currency: EUR }
cases:
${cases}`;
