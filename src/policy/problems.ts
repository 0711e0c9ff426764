/** One thing wrong with the configuration, located as precisely as we can. */
export interface ConfigProblem {
  file: string;
  path: string;
  message: string;
  line?: number;
}

export class ConfigError extends Error {
  constructor(readonly problems: ConfigProblem[]) {
    super(`configuration has ${problems.length} problem${problems.length === 1 ? '' : 's'}:\n${problems.map(formatProblem).join('\n')}`);
  }
}

export const formatProblem = (p: ConfigProblem): string =>
  `  ${p.file}${p.line ? `:${p.line}` : ''}${p.path ? ` at ${p.path}` : ''}: ${p.message}`;
