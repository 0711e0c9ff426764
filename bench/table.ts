/** A benchmark run's printed output, read back: its table's rows by phase and column, and its last-line JSON. */
export interface RunOutput {
  summary: Record<string, unknown>;
  /** Each row of the table, its cells by column name, under its phase. */
  rows: Map<string, Record<string, string>>;
}

export function readRun(stdout: string): RunOutput {
  const lines = stdout.trimEnd().split('\n');
  const cells = lines.filter((line) => line.startsWith('|')).map((line) => line.split('|').map((cell) => cell.trim()).slice(1, -1));
  const head = cells.find((c) => c[0] === 'phase') ?? [];
  const rows = new Map<string, Record<string, string>>();
  for (const row of cells) {
    if (row === head || row[0]!.startsWith(':-')) continue;
    rows.set(row[0]!, Object.fromEntries(head.map((name, i) => [name, row[i]!])));
  }
  return { summary: JSON.parse(lines.at(-1) ?? '{}') as Record<string, unknown>, rows };
}
