import type { EvaluateRequest } from '../../api/types.js';
import { OfflineEvaluator } from '../../evaluate/offline.js';
import type { Evaluation } from '../../evaluate/evaluator.js';
import type { Catalog } from '../../policy/catalog.js';
import { formatProblem } from '../../policy/problems.js';
import { readYamlFile } from '../../policy/yamlText.js';
import { validateEvaluateRequest } from '../../validate/evaluateRequest.js';
import { envOption, out, UsageError, type Command } from '../command.js';
import { configDirOf, loadWorkingTree } from './policy.js';

const n = (x: number) => (Number.isInteger(x) ? String(x) : x.toFixed(2));

/** The explanation as a reviewer reads it: decision, each signal's share, thresholds, each rule. */
export function formatExplanation(catalog: Catalog, { response, event }: Evaluation): string {
  const x = event.explanation;
  const policy = catalog.policies.get(response.policyId)!;
  const lines: string[] = [];
  lines.push(`operation   ${response.operationKey} (${response.sensitivity}) → policy ${response.policyId} ${response.policyVersionId}`);
  const extra = [response.challenge ? `challenge ${response.challenge.type}` : '', response.redaction ? `redact ${response.redaction.fields.join(', ')} (${response.redaction.strategy})` : '', response.retryAfterSeconds !== undefined ? `retry after ${response.retryAfterSeconds}s` : ''].filter(Boolean);
  lines.push(`decision    ${response.decision}${extra.length ? `  (${extra.join('; ')})` : ''}`);
  if (x.monitor) lines.push(`monitor     would have decided ${x.monitor.decision} (${x.monitor.reasons.join(', ')}); answered allow`);
  const ai = x.aiAssessment;
  lines.push(`score       ${n(response.score)} (${response.riskBand})${ai ? `; signals ${n(x.baseScore ?? response.score)}, advisory ${ai.status} ${ai.scoreDelta >= 0 ? '+' : ''}${n(ai.scoreDelta)}` : ''}`);
  lines.push(`reasons     ${response.reasons.join(', ')}`);
  if (x.challengeResult) lines.push(`challenge   retry ${x.challengeResult}`);
  lines.push('');
  lines.push('signals (value × weight = contribution)');
  if (x.signals.length === 0) lines.push('  none contributed');
  const width = Math.max(0, ...x.signals.map((s) => s.name.length));
  for (const s of [...x.signals].sort((a, b) => b.contribution - a.contribution)) {
    lines.push(`  ${s.name.padEnd(width)}  ${s.value.toFixed(2)} × ${String(s.weight).padStart(3)} = ${n(s.contribution).padStart(6)}${s.reason ? `   reason ${s.reason}` : ''}`);
  }
  lines.push('');
  lines.push('thresholds');
  const t = policy.thresholds;
  const entries: [string, number | undefined, string][] = [
    ['medium', t.medium, 'band medium'],
    ['high', t.high, 'band high'],
    ['stepUp', t.stepUp, 'step-up'],
    ['deny', t.deny, 'deny'],
  ];
  for (const [name, value, meaning] of entries) {
    if (value === undefined) continue;
    lines.push(`  ${response.score >= value ? '✓ crossed    ' : '  not crossed'} ${name.padEnd(7)} ${String(value).padStart(3)}  (${meaning})`);
  }
  lines.push('');
  lines.push('rules (in policy order)');
  const rw = Math.max(0, ...x.rules.map((r) => r.name.length));
  for (const r of x.rules) lines.push(`  ${r.fired ? '✓ fired' : '  -    '}  ${r.name.padEnd(rw)}  ${r.decision.padEnd(16)} ${r.reason}`);
  if (x.rules.length === 0) lines.push('  the policy has no rules');
  return lines.join('\n');
}

/** The request in a JSON or YAML file (YAML is a superset of JSON), read as fixtures' requests are: dates stay strings. */
export function readRequestFile(file: string): Record<string, unknown> {
  const read = readYamlFile(file, file);
  if ('problem' in read) throw new UsageError(formatProblem(read.problem).trim());
  return read.doc;
}

const explain: Command = {
  words: ['explain'],
  usage: 'explain --operation KEY --request FILE [DIR] [--env NAME] [--json]',
  positionals: ['DIR'],
  summary: 'evaluate one request offline and show its signals, thresholds and rules',
  options: { operation: { type: 'string' }, request: { type: 'string' }, env: { type: 'string' }, json: { type: 'boolean' } },
  async run({ values, positionals }) {
    const environment = envOption(values.env);
    const file = values.request as string | undefined;
    if (!file) throw new UsageError('--request FILE is required (an evaluate request body, JSON or YAML)');
    const body = readRequestFile(file);
    const operationKey = (values.operation as string | undefined) ?? (body as { operationKey?: string }).operationKey;
    if (!operationKey) throw new UsageError('--operation KEY is required (or operationKey in the request)');
    const checked = validateEvaluateRequest({ ...body, operationKey });
    if (!checked.ok) throw new UsageError(`${file} is not a valid evaluate request:\n${checked.details.map((d) => `  ${d.path}: ${d.message}`).join('\n')}`);
    const catalog = loadWorkingTree(configDirOf(positionals[0]));
    if (!catalog.operations.has(operationKey)) throw new UsageError(`operation "${operationKey}" is not defined; defined: ${[...catalog.operations.keys()].join(', ')}`);
    const evaluation = await new OfflineEvaluator({ catalog }).evaluate(checked.value as EvaluateRequest, environment);
    if (values.json) out(JSON.stringify({ response: evaluation.response, explanation: evaluation.event.explanation }, null, 2));
    else out(formatExplanation(catalog, evaluation));
    return 0;
  },
};

export default [explain];
