import type { Catalog } from './catalog.js';
import { compileCatalog } from './catalog.js';
import { loadConfigDir, type LoadedConfig } from './load.js';
import type { ConfigProblem } from './problems.js';

/**
 * Holds the configuration in force. A reload compiles off to the side and swaps the whole catalog
 * in one assignment: an evaluation that already read `current()` finishes on its version, and an
 * invalid edit leaves the last good one serving.
 */
export class ConfigHolder {
  private problems: ConfigProblem[] = [];
  private readonly listeners: ((catalog: Catalog) => Promise<void> | void)[] = [];

  constructor(private catalog: Catalog) {}

  current = (): Catalog => this.catalog;
  lastProblems = (): readonly ConfigProblem[] => this.problems;

  onSwap(listener: (catalog: Catalog) => Promise<void> | void): void {
    this.listeners.push(listener);
  }

  /**
   * Compiles `loaded` (the files read by the caller, who checked they had settled), or the folder as
   * it is now. Throws when the swap itself failed (a listener threw): nothing was swapped, and
   * lastProblems says why.
   */
  async reload(loaded?: LoadedConfig): Promise<{ ok: boolean; problems: ConfigProblem[]; catalog: Catalog }> {
    try {
      const { catalog, problems } = compileCatalog(loaded ?? loadConfigDir(this.catalog.dir));
      if (!catalog) {
        this.problems = problems;
        return { ok: false, problems, catalog: this.catalog };
      }
      for (const listener of this.listeners) await listener(catalog);
      this.catalog = catalog;
      this.problems = [];
      return { ok: true, problems: [], catalog };
    } catch (err) {
      // E.g. the store could not remember the new policy versions: /readyz must not say the reload went well.
      this.problems = [{ file: this.catalog.dir, path: '', message: `reload failed: ${(err as Error).message}` }];
      throw err;
    }
  }
}
