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

const [file, topArg] = process.argv.slice(2);
if (!file) throw new Error('usage: tsx bench/profile-top.ts FILE.cpuprofile [N]');
const top = Number(topArg ?? 25);
const profile = JSON.parse(fs.readFileSync(file, 'utf8')) as Profile;

const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const parent = new Map<number, number>();
for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);

const label = (n: Node) => {
  const url = n.callFrame.url.replace(/^file:\/\//, '').replace(/^.*\/node_modules\//, '~/').replace(/^.*\/dist\//, '');
  return `${n.callFrame.functionName || '(anonymous)'} ${url ? `${url}:${n.callFrame.lineNumber + 1}` : ''}`.trim();
};

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
show('self time', self);
show('inclusive time', inclusive);
