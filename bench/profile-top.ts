import fs from 'node:fs';

/**
 * `tsx bench/profile-top.ts FILE.cpuprofile [N]`: the top entries of a `node --cpu-prof` profile,
 * by self time (per function) and by inclusive time (per function, counted once per stack), so
 * the benchmark's profile can be read without a browser.
 */
interface Node {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface Profile {
  nodes: Node[];
  samples: number[];
  timeDeltas: number[];
}

// Piped into `head`, the reader may leave before the last line: that ends the summary, not an error.
process.stdout.on('error', (err: NodeJS.ErrnoException) => {
  if (err.code !== 'EPIPE') throw err;
  process.exit(0);
});

const [file, topArg] = process.argv.slice(2);
if (!file) throw new Error('usage: tsx bench/profile-top.ts FILE.cpuprofile [N]');
const top = Number(topArg ?? 25);
const profile = JSON.parse(fs.readFileSync(file, 'utf8')) as Profile;

const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const parent = new Map<number, number>();
for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);

const label = (n: Node) => {
  const raw = n.callFrame.url.replace(/^file:\/\//, '');
  const url = raw.includes('/node_modules/') ? raw.replace(/^.*\/node_modules\//, '~/') : raw.replace(/^.*\/dist\//, '');
  return `${n.callFrame.functionName || '(anonymous)'} ${url ? `${url}:${n.callFrame.lineNumber + 1}` : ''}`.trim();
};

// Areas: which package or part of TPS a function belongs to, for a summary of where time goes.
const AREAS: [RegExp, string][] = [
  [/~\/(json-rules-engine|clone|hash-it|eventemitter2|jsonpath-plus|lodash)/, 'json-rules-engine (with clone, hash-it, eventemitter2)'],
  [/~\/(knex|tarn|pg|pg-protocol|pg-pool)\//, 'knex / pg driver'],
  [/~\/sqlite3\//, 'sqlite3 driver (binding values, statements)'],
  [/node:zlib|explanationCodec|~\/zstd-napi\//, 'explanation encoding (JSON, zstd)'],
  [/~\/(koa|koa-compose|@koa|koa-bodyparser|co-body|raw-body|type-is|@hapi|delegates|on-finished|statuses|http-errors|accepts|content-type|negotiator|mime|vary|only|encodeurl|escape-html|cookies|keygrip|depd|iconv-lite|inflation|bytes|unpipe|media-typer|destroy|ee-first)\//, 'koa, router, bodyparser'],
  [/~\/yup\/|src\/validate\//, 'validation (yup, fast path)'],
  [/~\/(prom-client|tdigest|bintrees)\//, 'prom-client'],
  [/~\/(pino|sonic-boom|thread-stream|fast-redact)\//, 'pino'],
  [/~\/safe-stable-stringify\/|fingerprint/, 'fingerprint (stable stringify + sha256)'],
  [/node:(_http|http|net|stream|internal\/streams|internal\/stream_base|events|buffer|internal\/http)|^(writev|writeBuffer|writeUtf8String|parserOnHeadersComplete)/, 'node http / net / streams'],
  [/node:internal\/crypto|node:crypto|randomFillSync|^Hash |^digest |^update /, 'node crypto (keys, ids, fingerprint)'],
  [/src\/(store|record|events)\//, 'TPS store & group commit'],
  [/src\/(evaluate|facts|risk|policy|decide|ai|state)\//, 'TPS evaluate pipeline'],
  [/src\/(http|auth)\//, 'TPS HTTP middleware & auth'],
  [/\(garbage collector\)/, 'garbage collector'],
  [/\(program\)/, '(program: native, unattributed)'],
  [/node:internal\/modules|wrapSafe|cjs-module-lexer|internal\/bootstrap/, 'module loading (start-up)'],
  [/runMicrotasks|processTicksAndRejections|node:internal\/process|node:internal\/timers|^(nextTick|emit|listOnTimeout|processTimers)/, 'promises / ticks / timers'],
];
const areaOf = (name: string) => AREAS.find(([re]) => re.test(name))?.[1] ?? 'other';
const areas = new Map<string, number>();
const self = new Map<string, number>();
const inclusive = new Map<string, number>();
let total = 0;
let idle = 0;
profile.samples.forEach((id, i) => {
  const dt = profile.timeDeltas[i] ?? 0;
  total += dt;
  const node = byId.get(id)!;
  const name = label(node);
  if (name === '(idle)') idle += dt;
  self.set(name, (self.get(name) ?? 0) + dt);
  if (name !== '(idle)' && name !== '(root)') areas.set(areaOf(name), (areas.get(areaOf(name)) ?? 0) + dt);
  const seen = new Set<string>();
  for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
    const l = label(byId.get(cur)!);
    if (seen.has(l)) continue;
    seen.add(l);
    inclusive.set(l, (inclusive.get(l) ?? 0) + dt);
  }
});

const busy = total - idle;
const pct = (us: number) => `${((us / busy) * 100).toFixed(1).padStart(5)}%`;
const show = (title: string, m: Map<string, number>) => {
  console.log(`\n${title} (share of ${(busy / 1000).toFixed(0)} ms busy; idle ${((idle / total) * 100).toFixed(1)}% of wall)`);
  for (const [name, us] of [...m].filter(([n]) => n !== '(idle)' && n !== '(root)').sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`${pct(us)}  ${name}`);
};
show('self time by area', areas);
show('self time', self);
show('inclusive time', inclusive);
if (process.env.SHOW_OTHER) show('other (unclassified)', new Map([...self].filter(([n]) => areaOf(n) === 'other')));
