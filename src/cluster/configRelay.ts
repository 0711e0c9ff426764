import cluster, { type Worker } from 'node:cluster';
import type { Logger } from '../http/logger.js';
import type { ConfigHolder } from '../policy/holder.js';
import type { LoadedConfig } from '../policy/load.js';
import { answerWorkers, isMessage, primaryRequests } from './primaryRequests.js';

/**
 * The configuration of a cluster's workers (TPS_WORKERS > 1). A worker starts from the source the
 * serving workers last swapped in, which the primary keeps (load.ts's LoadedConfig, compiled as the
 * evaluation thread compiles it), not from the files: a replacement reading them would not start
 * on an edit the others refused (a YAML error), and with TPS_WATCH_CONFIG=false would decide on
 * an edit the others never reloaded. The primary also passes SIGHUP on, to listening workers only
 * (one still starting would die of it), and has a worker that started while a reload was asked
 * for, or while the others swapped, reload once it listens.
 */

type Get = { tps: 'config.get'; id: number };
type Given = { tps: 'config.given'; id: number; source: LoadedConfig } | { tps: 'config.unavailable'; id: number; message: string };
/** A worker swapped this in (a reload, whatever asked for it). */
type Swapped = { tps: 'config.swapped'; source: LoadedConfig; versionId: string };
/** A worker's reload asked for by SIGHUP is over, swapped or refused. */
type Reloaded = { tps: 'config.reloaded' };

const isGet = isMessage<Get>('config.get');
const isGiven = isMessage<Given>('config.given', 'config.unavailable');
const isSwapped = isMessage<Swapped>('config.swapped');
const isReloaded = isMessage<Reloaded>('config.reloaded');

/** A source, and how many SIGHUPs it answers for: those before it was read, or whose reloads are all over. */
interface Latest {
  source: LoadedConfig;
  versionId: string;
  asOf: number;
}

/** The primary's side. */
export class ConfigRelay {
  private hups = 0;
  private latest: Latest | undefined;
  /** SIGHUPs sent to each worker whose reloads have not said they are over. */
  private readonly reloading = new Map<Worker, number>();
  /** What each worker still starting was given. */
  private readonly given = new Map<Worker, Omit<Latest, 'source'>>();

  constructor(private readonly logger: Logger) {
    answerWorkers(
      isGet,
      async (m, worker): Promise<Given> => {
        if (!this.latest) throw new Error('the primary has no configuration yet');
        this.given.set(worker, { versionId: this.latest.versionId, asOf: this.latest.asOf });
        return { tps: 'config.given', id: m.id, source: this.latest.source };
      },
      (m, message): Given => ({ tps: 'config.unavailable', id: m.id, message }),
    );
    cluster.on('message', (worker, m: unknown) => {
      if (isSwapped(m) && this.latest) this.latest = { ...this.latest, source: m.source, versionId: m.versionId };
      if (isReloaded(m)) {
        this.reloading.set(worker, Math.max(0, (this.reloading.get(worker) ?? 0) - 1));
        this.settle();
      }
    });
  }

  /** SIGHUPs so far: what the primary's own compile answers for, counted before it reads the files. */
  get asked(): number {
    return this.hups;
  }

  /** The configuration the primary compiled as it prepared the store, read after `asOf` SIGHUPs. */
  begin(source: LoadedConfig, versionId: string, asOf: number): void {
    this.latest = { source, versionId, asOf };
  }

  /** SIGHUP: a reload in every listening worker; one still starting reloads once it listens. */
  reload(listening: Iterable<Worker>): void {
    this.hups++;
    for (const worker of listening) this.signal(worker);
  }

  /** A worker listens: if a reload was asked for, or the others swapped, since its source was read, it reloads now. */
  listening(worker: Worker): void {
    const given = this.given.get(worker);
    this.given.delete(worker);
    if (!given || !this.latest || (this.hups <= given.asOf && given.versionId === this.latest.versionId)) return;
    this.logger.info({ pid: worker.process.pid }, 'a TPS worker started during a reload; it reloads now');
    this.signal(worker);
  }

  exited(worker: Worker): void {
    this.given.delete(worker);
    this.reloading.delete(worker);
    this.settle();
  }

  private signal(worker: Worker): void {
    this.reloading.set(worker, (this.reloading.get(worker) ?? 0) + 1);
    worker.process.kill('SIGHUP');
  }

  /** Once no reload is under way, the latest source answers for every SIGHUP so far. */
  private settle(): void {
    if (this.latest && [...this.reloading.values()].every((n) => n === 0)) this.latest.asOf = this.hups;
  }
}

/** A worker's side: the configuration source to start from, as the primary hands it. */
export async function configFromPrimary(): Promise<LoadedConfig> {
  const ask = primaryRequests(isGiven, (why) => new Error(`${why}: no configuration to start from`));
  const reply = await ask((id): Get => ({ tps: 'config.get', id }));
  if (reply.tps === 'config.unavailable') throw new Error(`the primary gave no configuration: ${reply.message}`);
  return reply.source;
}

const toPrimary = (m: Swapped | Reloaded) => void (process.connected && process.send!(m, undefined, undefined, () => undefined));

/**
 * A worker's side: tells the primary of each configuration it swaps in, and wraps its SIGHUP reload
 * to say when that is over. Registered after the service's own swap listeners, so it is the last:
 * nothing can refuse the swap after it has said so.
 */
export function reportReloads(holder: ConfigHolder, reload: () => Promise<unknown>): () => Promise<void> {
  holder.onSwap((next) => toPrimary({ tps: 'config.swapped', source: next.source, versionId: next.versionId }));
  return async () => {
    await reload().catch(() => undefined);
    toPrimary({ tps: 'config.reloaded' });
  };
}
