import Router from '@koa/router';
import { ApiError } from '../../api/errors.js';
import type { IngestResponse } from '../../api/types.js';
import type { KeyRing } from '../../auth/keyring.js';
import { bearerKey } from '../../auth/keys.js';
import type { CursorCodec } from '../../events/cursor.js';
import type { EventHub } from '../../events/hub.js';
import type { Ingestor } from '../../events/ingest.js';
import { toPublicEvent, type PublicEvent } from '../../events/publicEvent.js';
import { StreamSubscriber, type StreamOptions } from '../../events/subscriber.js';
import type { KnexEventStore } from '../../store/eventStore.js';
import type { PolicyVersionStore } from '../../store/policyVersionStore.js';
import { NOT_OURS, validateEventQuery } from '../../validate/eventQuery.js';
import { TELEMETRY_ID, TELEMETRY_ID_RULE, validateIngestRecord } from '../../validate/ingestRecord.js';
import { storeReadFailed, type Ctx, type Middleware, type TpsState } from '../middleware.js';

export interface EventRoutesDeps {
  store: KnexEventStore;
  ingestor: Ingestor;
  hub: EventHub;
  policyVersions: PolicyVersionStore;
  stream: StreamOptions;
  /** The stream checks its key again as it runs (a revocation ends it). */
  keys: Pick<KeyRing, 'authenticate'>;
  /** Cursors (nextCursor, stream ids) under the service's secret, each valid in its own environment only. */
  cursors: CursorCodec;
}

function query(ctx: Ctx, stream: boolean) {
  const checked = validateEventQuery(ctx.query, { stream });
  if (!checked.ok) throw new ApiError('invalid_request', 'the event query is invalid', checked.details);
  return checked.value;
}

const invalidCursor = (path: 'cursor' | 'Last-Event-ID', why: string) => new ApiError('invalid_request', 'the event query is invalid', [{ path, message: `${path} ${why}` }]);

/** Ingest, Decision Logs and Event Stream (CONTRACT); every read is scoped to the key's environment. */
export function eventRoutes(guard: Middleware[], json: Middleware[], deps: EventRoutesDeps): Router<TpsState> {
  const router = new Router<TpsState>();

  router.post('/api/events/ingest', ...guard, ...json, async (ctx) => {
    const checked = validateIngestRecord(ctx.request.body);
    if (!checked.ok) throw new ApiError('invalid_request', 'the ingest record is invalid', checked.details);
    const { telemetryId } = checked.value;
    let outcome;
    try {
      outcome = await deps.ingestor.ingest(ctx.state.principal.environment, checked.value);
    } catch (err) {
      throw ApiError.storeUnavailable('the event could not be recorded; nothing was stored, retry the ingest', err);
    }
    if (outcome === 'conflict') throw new ApiError('telemetry_id_conflict', `telemetryId "${telemetryId}" is already stored with different content`);
    ctx.status = outcome === 'stored' ? 201 : 200;
    ctx.body = (outcome === 'stored' ? { telemetryId, stored: true } : { telemetryId, stored: false, duplicate: true }) satisfies IngestResponse;
  });

  router.get('/api/events', ...guard, async (ctx) => {
    const q = query(ctx, false);
    const { environment } = ctx.state.principal;
    const at = q.cursor === undefined ? undefined : deps.cursors.read(environment, q.cursor);
    if (q.cursor !== undefined && at === undefined) throw invalidCursor('cursor', NOT_OURS);
    // Before an event (nextCursor, a stream's event id) excludes it; a stream's position includes its seq.
    const before = at === undefined ? undefined : at.position ? at.seq + 1 : at.seq;
    // One extra row says whether another page exists, so the last page has no cursor.
    const rows = await deps.store.page(environment, q.filter, { order: 'desc', before, limit: q.limit + 1 }).catch(storeReadFailed);
    const events = rows.slice(0, q.limit);
    ctx.body = { events: events.map(toPublicEvent), nextCursor: rows.length > q.limit ? deps.cursors.encode(environment, events[events.length - 1]!.seq) : null } satisfies { events: PublicEvent[]; nextCursor: string | null };
  });

  router.get('/api/events/stream', ...guard, async (ctx) => {
    const q = query(ctx, true);
    const { keyId, environment } = ctx.state.principal;
    // Last-Event-ID (an EventSource reconnecting) wins over ?cursor=.
    const lastEventId = ctx.get('last-event-id');
    const path = lastEventId ? 'Last-Event-ID' : 'cursor';
    const cursor = lastEventId || q.cursor;
    const resumeAfter = cursor === undefined ? undefined : deps.cursors.decode(environment, cursor);
    if (cursor !== undefined && resumeAfter === undefined) throw invalidCursor(path, NOT_OURS);
    // The guard checked the key at connect; a stream outlives that check, so it asks again as it runs.
    const key = bearerKey(ctx.get('authorization'));
    const keyStands = async () => key !== undefined && (await deps.keys.authenticate(key))?.keyId === keyId;
    const subscriber = new StreamSubscriber(ctx.res, deps.hub, deps.store, environment, q.filter, deps.stream, deps.cursors, keyStands);
    // A cursor past the newest stored event is ours (it decoded) and at or below the seqs the store
    // has issued: retention deleted the events up to it, and the stream resumes. Above that mark it
    // was issued after this store's state (a store restored from a backup, or cloned with its
    // secret): seqs at or below it will be issued again, and the stream would skip their events.
    if (resumeAfter !== undefined && resumeAfter > (await deps.store.issuedHead().catch(storeReadFailed))) {
      throw invalidCursor(path, 'is past the newest event this store has issued');
    }
    await subscriber.open(resumeAfter).catch(storeReadFailed);
    // From here the subscriber writes the response for as long as the client stays; Koa lets go of it.
    ctx.respond = false;
    subscriber.serve();
  });

  router.get('/api/events/:telemetryId', ...guard, async (ctx) => {
    const telemetryId = ctx.params.telemetryId!;
    // Only ids ingest could have stored reach the store (a NUL would fail PostgreSQL's query).
    if (!TELEMETRY_ID.test(telemetryId)) throw new ApiError('invalid_request', 'the telemetryId is invalid', [{ path: 'telemetryId', message: `telemetryId ${TELEMETRY_ID_RULE}` }]);
    const event = await deps.store.find(ctx.state.principal.environment, telemetryId).catch(storeReadFailed);
    if (!event) throw new ApiError('not_found', 'no event with this telemetryId in this environment');
    const version = event.policyVersionId ? await deps.policyVersions.get(event.policyVersionId).catch(storeReadFailed) : undefined;
    ctx.body = {
      ...toPublicEvent(event),
      // The exact compiled policy that decided this event, kept for as long as any event refers to it.
      policyVersion: version ? { ...version, createdAt: new Date(version.createdAt).toISOString() } : null,
    };
  });

  return router;
}
