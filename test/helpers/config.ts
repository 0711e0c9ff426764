import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { openDatabase, type Database } from '../../src/store/db.js';
import { freshDatabase, REPO_ROOT, type StoreKind } from './tps.js';

/** A temporary copy of the sample configuration (operations/ and rules/, fixtures included) to edit. */
export interface TempConfig {
  dir: string;
  path(rel: string): string;
  read(rel: string): string;
  write(rel: string, text: string): void;
  /** Replaces `from` by `to` in a file; throws if `from` is not there (the edit would test nothing). */
  replace(rel: string, from: string, to: string): void;
  remove(rel: string): void;
  cleanup(): void;
}

export function tempConfig(options: { fixtures?: boolean } = {}): TempConfig {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tps-config-'));
  for (const sub of ['operations', 'rules']) {
    fs.mkdirSync(path.join(dir, sub));
    for (const f of fs.readdirSync(path.join(REPO_ROOT, sub))) {
      if (options.fixtures === false && f.includes('.fixtures.')) continue;
      fs.copyFileSync(path.join(REPO_ROOT, sub, f), path.join(dir, sub, f));
    }
  }
  const p = (rel: string) => path.join(dir, rel);
  return {
    dir,
    path: p,
    read: (rel) => fs.readFileSync(p(rel), 'utf8'),
    write: (rel, text) => fs.writeFileSync(p(rel), text),
    replace(rel, from, to) {
      const text = fs.readFileSync(p(rel), 'utf8');
      if (!text.includes(from)) throw new Error(`${rel} does not contain ${JSON.stringify(from)}`);
      fs.writeFileSync(p(rel), text.replace(from, to));
    },
    remove: (rel) => fs.rmSync(p(rel), { force: true }),
    cleanup: () => fs.rmSync(dir, { recursive: true, force: true }),
  };
}

/** A fresh, migrated store (SQLite file or PostgreSQL schema), open; close() also drops it. */
export async function openFreshStore(store: StoreKind): Promise<{ db: Database; url: string; close(): Promise<void> }> {
  const fresh = freshDatabase(store);
  const db = await openDatabase(fresh.url);
  return {
    db,
    url: fresh.url,
    async close() {
      await db.close();
      await fresh.drop();
    },
  };
}
