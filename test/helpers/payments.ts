/**
 * A payment by a finance user in a calm human session: rules/payments.yaml allows it up to its
 * threshold (value: 10000) and steps it up above, which is what a test that edits the threshold reads.
 */
export const financePayment = (amount: number) => ({
  operationKey: 'payment_transaction.create',
  actor: { id: 'fin-1', authenticated: true, roles: ['finance'] },
  resource: { type: 'payment_method', id: 'pm-1' },
  requestData: { amount, currency: 'EUR' },
  session: { sessionId: 's-1', continuityStrength: 0.95, recentHumanSignalAgeSeconds: 5 },
});
