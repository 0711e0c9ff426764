import http from 'node:http';
import Router from '@koa/router';
import Koa from 'koa';
import bodyParser from 'koa-bodyparser';

/**
 * The benchmark's yardstick (issue 7, a): a bare Koa app with koa-bodyparser and a router that
 * parses the same JSON body as /api/evaluate and answers a constant JSON object of the same shape,
 * with no validation, scoring, policy or storage. Run as its own process on PORT.
 */
const ANSWER = {
  decision: 'allow',
  score: 12.5,
  riskBand: 'low',
  reasons: ['low_risk_operation'],
  telemetryId: '00000000-0000-4000-8000-000000000000',
  operationKey: 'customer.create',
  operationDisplayName: 'Create customer',
  actionType: 'create',
  resourceType: 'customer',
  sensitivity: 'medium',
  policyId: 'standard',
  policyVersionId: 'pv_00000000000000000000',
  warnings: [],
};

const app = new Koa();
const router = new Router();
router.post('/api/evaluate', (ctx) => {
  ctx.body = ANSWER;
});
app.use(bodyParser({ enableTypes: ['json'], jsonLimit: '64kb', strict: true }));
app.use(router.routes());

const server = http.createServer(app.callback());
server.keepAliveTimeout = 65_000;
server.listen(Number(process.env.PORT ?? 8788), '127.0.0.1', () => process.stdout.write(`baseline listening on ${process.env.PORT}\n`));
process.on('SIGTERM', () => server.close(() => process.exit(0)));
