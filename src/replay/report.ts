import { DECISIONS } from '../api/types.js';
import { NO_DECISION } from './noDecision.js';
import type { ReplayReport } from './replay.js';

const pct = (n: number, of: number) => (of === 0 ? '0%' : `${((100 * n) / of).toFixed(1)}%`);

/** The replay as a reviewer reads it: how much changes, the transition matrix, other changed answers, samples, skips. */
export function formatReplay(r: ReplayReport): string {
  const lines: string[] = [];
  const range = r.firstSeq === undefined ? '' : ` (seq ${r.firstSeq}..${r.lastSeq})`;
  lines.push(`examined ${r.examined} events${range} with the working tree's configuration ${r.configurationVersionId}`);
  lines.push(`replayed ${r.replayed}, skipped ${r.examined - r.replayed}`);
  // Answers with no decision are changes too: said here, so the count a gate fails on adds up.
  const none = NO_DECISION.map((a) => [a, r.transitions.reduce((n, t) => n + (t.to === a ? t.count : 0), 0)] as const).filter(([, n]) => n > 0);
  const noneText = none.map(([a, n]) => `; ${n} to ${a}`).join('');
  lines.push(`decisions that change: ${r.changed} of ${r.replayed} (${pct(r.changed, r.replayed)}${noneText})`);
  lines.push(`other answers that change (same decision): ${r.outcomeChanged} of ${r.replayed} (${pct(r.outcomeChanged, r.replayed)})`);
  if (r.rebuiltCounts) lines.push(`velocity counts rebuilt from the stored events: ${r.rebuiltCounts} (none recorded, or counted over another window)`);
  const checked = r.retriesNowChecked;
  if (checked.count) {
    const e = checked.samples.length ? `, e.g. ${checked.samples.join(', ')}` : '';
    lines.push(`satisfied retries recorded without a velocity count, now held to TPS's window: ${checked.count} (${checked.changed} decisions change${e})`);
  }
  if (r.monitored.recorded || r.monitored.replayed) lines.push(`monitored: ${r.monitored.recorded} when recorded, ${r.monitored.replayed} with the working tree`);

  const used = DECISIONS.filter((d) => r.matrix[d] || Object.values(r.matrix).some((row) => row[d]));
  // A recorded event always has a decision; the working tree may answer none (extra columns).
  const columns = [...used, ...NO_DECISION.filter((a) => Object.values(r.matrix).some((row) => row[a]))];
  if (used.length) {
    const w = Math.max(14, ...columns.map((d) => d.length));
    lines.push('', 'recorded ↓  replayed →');
    lines.push(`  ${''.padEnd(w)}${columns.map((d) => d.padStart(w + 1)).join('')}`);
    for (const from of used) lines.push(`  ${from.padEnd(w)}${columns.map((to) => String(r.matrix[from]?.[to] ?? 0).padStart(w + 1)).join('')}`);
  }
  if (r.transitions.length) {
    lines.push('', 'transitions');
    for (const t of r.transitions) lines.push(`  ${t.from} → ${t.to}: ${t.count}   e.g. ${t.samples.join(', ')}${t.detail === undefined ? '' : `   (${t.detail})`}`);
  }
  if (r.outcomeChanges.length) {
    lines.push('', 'outcome changes (same decision)');
    for (const c of r.outcomeChanges) lines.push(`  ${c.part}: ${c.from} → ${c.to}: ${c.count}   e.g. ${c.samples.join(', ')}`);
  }
  if (r.skipped.length) {
    lines.push('', 'skipped (nothing recorded to compare; not changes)');
    for (const s of r.skipped) lines.push(`  ${s.count}  ${s.reason}   e.g. ${s.samples.join(', ')}`);
  }
  return lines.join('\n');
}
