import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import test from 'ava';
import { openDatabase } from '../../src/store/db.js';
import { runningServer, startServer } from '../helpers/script.js';
import { post, REPO_ROOT, freshDatabase } from '../helpers/tps.js';
import { samples } from './evaluate-suite.js';

// The first start prints the development keys only when none are given.
const noKeys = { TPS_SECRET_KEY: '', TPS_PUBLISHABLE_KEY: '' };
const start = (env: Record<string, string>) => runningServer({ ...noKeys, ...env });
const secretKeyPrinted = (stdout: string) => /secret key \(server side only\): (svc_sec_\S+)/.exec(stdout)?.[1];

test('a first start creates the development keys, prints them once and they work; keys are stored as hashes', async (t) => {
  const db = freshDatabase('sqlite');
  try {
    const first = await start({ DATABASE_URL: db.url });
    const secret = secretKeyPrinted(first.stdout);
    const publishable = /publishable key \(browser\):\s+(svc_pub_\S+)/.exec(first.stdout)?.[1];
    t.truthy(secret);
    t.truthy(publishable);
    const res = await post(`http://127.0.0.1:${first.port}/api/evaluate`, samples.createCustomer(), secret);
    t.is(res.status, 200);
    await first.stop();

    const second = await start({ DATABASE_URL: db.url });
    t.false(second.stdout.includes('svc_sec_'), 'printed only once');
    await second.stop();

    const opened = await openDatabase(db.url);
    const dump = JSON.stringify(await opened.knex('api_keys').select('*'));
    await opened.close();
    t.false(dump.includes(secret!));
    t.false(dump.includes(publishable!));
    t.true(dump.includes('"environment":"development"'));
  } finally {
    await db.drop();
  }
});

test('a bad configuration stops start-up with the file, the path and the reason', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tps-bad-'));
  fs.cpSync(path.join(REPO_ROOT, 'rules'), path.join(dir, 'rules'), { recursive: true });
  fs.mkdirSync(path.join(dir, 'operations'));
  fs.writeFileSync(path.join(dir, 'operations', 'x.yaml'), 'key: x.create\ndisplayName: X\nactionType: create\nresourceType: x\nsensitivity: low\npolicy: standard\nweight: 3\n');
  const db = freshDatabase('sqlite');
  try {
    const run = await startServer({ ...noKeys, DATABASE_URL: db.url, TPS_CONFIG_DIR: dir });
    t.is(run.code, 1);
    t.regex(run.stderr, /x\.yaml:7 at weight: weight is not a known field/);
    t.false(fs.existsSync(db.url.slice('sqlite:'.length)), 'nothing was created: configuration is checked before the store is opened');
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
    await db.drop();
  }
});

test('TPS_SQLITE_PAGE_SIZE makes a new file of those pages; a later start asking for others keeps the file\'s and says so', async (t) => {
  const db = freshDatabase('sqlite');
  try {
    const first = await start({ DATABASE_URL: db.url, TPS_SQLITE_PAGE_SIZE: '4096' });
    const secret = secretKeyPrinted(first.stdout);
    try {
      t.is((await post(`http://127.0.0.1:${first.port}/api/evaluate`, samples.createCustomer(), secret)).status, 200);
      t.false(first.stdout.includes('TPS_SQLITE_PAGE_SIZE applies to new files'));
    } finally {
      await first.stop();
    }

    const second = await start({ DATABASE_URL: db.url });
    try {
      const warning = second.stdout.split('\n').find((line) => line.includes('TPS_SQLITE_PAGE_SIZE applies to new files'));
      t.truthy(warning, second.stdout);
      t.like(JSON.parse(warning!), { level: 40, pageSize: 4096, requested: 1024 });
      t.is((await post(`http://127.0.0.1:${second.port}/api/evaluate`, samples.createCustomer(), secret)).status, 200);
    } finally {
      await second.stop();
    }
    const opened = await openDatabase(db.url);
    try {
      t.is(opened.pageSize, 4096);
      t.is(Number((await opened.knex('events').count({ n: '*' }))[0]!.n), 2);
    } finally {
      await opened.close();
    }
  } finally {
    await db.drop();
  }
});
