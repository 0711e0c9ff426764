import { eventToFixtureCase, fixtureCaseYaml } from '../../replay/toFixture.js';
import { fromRow, type EventRow } from '../../store/eventStore.js';
import { openEventsToRead } from '../readStore.js';
import { envOption, out, UsageError, type Command } from '../command.js';
import { configDirOf, loadWorkingTree } from './policy.js';

const toFixture: Command = {
  words: ['events', 'to-fixture'],
  usage: 'events to-fixture TELEMETRY_ID [DIR] [--env NAME] [--name TEXT]',
  positionals: ['TELEMETRY_ID', 'DIR'],
  summary: 'turn a stored event into a fixture case (YAML) for rules/<policy>.fixtures.yaml',
  options: { env: { type: 'string' }, name: { type: 'string' } },
  async run({ values, positionals }) {
    const [telemetryId, dir] = positionals;
    if (!telemetryId) throw new UsageError('usage: tps events to-fixture TELEMETRY_ID [DIR] [--env NAME] [--name TEXT]');
    const env = envOption(values.env);
    const catalog = loadWorkingTree(configDirOf(dir));
    const db = await openEventsToRead();
    try {
      const q = db.knex<EventRow>('events').where('telemetry_id', telemetryId);
      if (env) q.where('environment', env);
      const rows: EventRow[] = await q.limit(2);
      // An error, so on stderr: `>> rules/x.fixtures.yaml` must not append it to the fixtures.
      if (rows.length === 0) throw new Error(`no event with telemetryId ${telemetryId}${env ? ` in environment ${env}` : ''}`);
      if (rows.length > 1) throw new UsageError(`telemetryId ${telemetryId} exists in several environments: name one with --env`);
      const event = fromRow(rows[0]!);
      const c = eventToFixtureCase(event, catalog, values.name as string | undefined);
      const policyId = catalog.operations.get(event.operationKey)?.policyId;
      const where = `paste under cases: in the fixtures file beside policy "${policyId}" (rules/<policy file>.fixtures.yaml)`;
      out(fixtureCaseYaml(c, `from event ${event.telemetryId} (${event.environment}, ${event.createdAt}); ${where}`).trimEnd());
    } finally {
      await db.close();
    }
    return 0;
  },
};

export default [toFixture];
