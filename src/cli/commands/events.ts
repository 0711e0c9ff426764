import { setTimeout as sleep } from 'node:timers/promises';
import type { ParseArgsConfig } from 'node:util';
import type { DecisionEvent } from '../../api/types.js';
import { retryAfter } from '../../client/transport.js';
import { readSettings } from '../../config/env.js';
import { exportEvents } from '../../events/export.js';
import { parseSse, type SseState } from '../../events/sseParser.js';
import type { EventFilter } from '../../store/eventFilter.js';
import { KnexEventStore } from '../../store/eventStore.js';
import { validateEventQuery } from '../../validate/eventQuery.js';
import { envOption, err, out, UsageError, type Command } from '../command.js';
import { openEventsToRead } from '../readStore.js';

// The Decision Logs filters, spelled as in the HTTP query string.
const FILTERS = ['operationKey', 'actorId', 'resourceType', 'resourceId', 'decision', 'riskBand', 'source', 'reason', 'from', 'to'] as const;
const filterOptions: ParseArgsConfig['options'] = Object.fromEntries(FILTERS.map((name) => [name, { type: 'string' }]));
// A stray word (`decision=deny`) or a repeated filter is refused by parseFor, as the API refuses them.
const FILTERS_HINT = 'filters are --name value, each given once';
const FILTER_USAGE = '[--operationKey K] [--actorId ID] [--resourceType T] [--resourceId ID] [--decision D] [--riskBand B] [--source S] [--reason R] [--from ISO] [--to ISO]';

type Values = Record<string, string | boolean | string[] | boolean[] | undefined>;

function pickFilters(values: Values): Record<string, string> {
  return Object.fromEntries(FILTERS.filter((f) => typeof values[f] === 'string').map((f) => [f, values[f] as string]));
}

/** The same validation as GET /api/events, so the CLI and the API accept the same filters. */
function filterOf(values: Values): EventFilter {
  const checked = validateEventQuery(pickFilters(values), { stream: true });
  if (!checked.ok) throw new UsageError(checked.details.map((d) => `--${d.message}`).join('\n'));
  return checked.value.filter;
}

const exportCommand: Command = {
  words: ['events', 'export'],
  usage: `events export [--env NAME] ${FILTER_USAGE}`,
  optionsHint: FILTERS_HINT,
  summary: 'write matching events as NDJSON to stdout, oldest first (reads DATABASE_URL)',
  options: { env: { type: 'string' }, ...filterOptions },
  async run({ values }) {
    const filter = filterOf(values);
    const settings = readSettings();
    const environment = envOption(values.env) ?? settings.environment;
    // A read: never migrates, never creates a store where DATABASE_URL is misspelt.
    const db = await openEventsToRead();
    try {
      const count = await exportEvents(new KnexEventStore(db), environment, filter, process.stdout);
      err(`exported ${count} event${count === 1 ? '' : 's'} of environment "${environment}"`);
      return 0;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'EPIPE') return 0; // the reader (e.g. `head`) left
      throw e;
    } finally {
      await db.close();
    }
  },
};

type ErrorBody = { error?: { message?: string; details?: { path?: string }[] } };

// The longest pause after a 429: the quota is per minute.
const MAX_PAUSE_MS = 60_000;

const line = (e: DecisionEvent): string =>
  [e.createdAt, e.decision.padEnd(16), String(e.score).padStart(6), e.operationKey, `actor=${e.actorId}`, `${e.resourceType}/${e.resourceId}`, `[${e.reasons.join(',')}]`, e.telemetryId].join('  ');

const tail: Command = {
  words: ['events', 'tail'],
  usage: `events tail [--url URL] [--key svc_sec_…] [--json] ${FILTER_USAGE}`,
  optionsHint: FILTERS_HINT,
  summary: 'follow the live event stream of a running server (TPS_URL, TPS_SECRET_KEY)',
  options: { url: { type: 'string' }, key: { type: 'string' }, json: { type: 'boolean' }, ...filterOptions },
  async run({ values }) {
    filterOf(values);
    const base = ((values.url as string | undefined) ?? process.env.TPS_URL ?? `http://127.0.0.1:${process.env.PORT ?? 8787}`).replace(/\/+$/, '');
    // Checked once here: the loop below retries failures, and an unusable URL would fail forever.
    if (!URL.canParse(base) || !/^https?:$/.test(new URL(base).protocol)) throw new UsageError(`--url (or TPS_URL) must be an http:// or https:// URL, got "${base}"`);
    const key = (values.key as string | undefined) ?? process.env.TPS_SECRET_KEY;
    if (!key) throw new UsageError('--key (or TPS_SECRET_KEY) is required: the stream needs the environment secret key');
    const url = `${base}/api/events/stream?${new URLSearchParams(pickFilters(values))}`;
    const stop = new AbortController();
    const quit = () => stop.abort();
    process.once('SIGINT', quit);
    process.once('SIGTERM', quit);
    // The last id the server sent, kept across connections as EventSource keeps it: an event's, or
    // the position a stream opens with (or a heartbeat carries) before any event matched.
    const sse: SseState = {};
    let pauseMs = 1000;
    try {
      // Follow until interrupted; after a dropped connection, resume exactly after that id.
      while (!stop.signal.aborted) {
        try {
          const res = await fetch(url, {
            headers: { authorization: `Bearer ${key}`, accept: 'text/event-stream', ...(sse.lastEventId ? { 'last-event-id': sse.lastEventId } : {}) },
            signal: stop.signal,
          });
          if (!res.ok || !res.body) {
            const body = (await res.json().catch(() => undefined)) as ErrorBody | undefined;
            const said = `tps: the server answered ${res.status}: ${body?.error?.message ?? res.statusText}`;
            // The key's quota comes back: wait as told, rather than end a follow that would resume.
            if (res.status === 429) {
              pauseMs = Math.min(MAX_PAUSE_MS, Math.max(1000, (retryAfter(res.headers) ?? 1) * 1000));
              err(`${said}; retrying in ${Math.round(pauseMs / 1000)} s`);
            } else if (res.status === 400 && sse.lastEventId && body?.error?.details?.some((d) => d.path === 'Last-Event-ID')) {
              // The position is no longer one the server accepts (migration 006 or its rollback, a
              // store made anew): a follow goes on from now rather than end.
              err(`${said}; the server refused the position to resume from, so events committed since it may be missing here; following from now`);
              sse.lastEventId = undefined;
            } else {
              err(said);
              if (res.status < 500) return 1;
            }
          } else {
            for await (const item of parseSse(res.body as unknown as AsyncIterable<Uint8Array>, sse)) {
              if (item.kind !== 'message') continue;
              out(values.json ? item.data : line(JSON.parse(item.data) as DecisionEvent));
            }
          }
        } catch (e) {
          if (stop.signal.aborted) break;
          err(`tps: stream interrupted (${(e as Error).message}); reconnecting`);
        }
        await sleep(pauseMs, undefined, { signal: stop.signal }).catch(() => undefined);
        pauseMs = 1000;
      }
      return 0;
    } finally {
      process.off('SIGINT', quit);
      process.off('SIGTERM', quit);
    }
  },
};

export default [exportCommand, tail];
