import { isAlias, isMap, isScalar, isSeq, LineCounter, parseDocument, type Document, type Node } from 'yaml';

// Where a YAML path sits in its file. js-yaml (the parser the service loads with) keeps no
// positions, and its `listener` hook reports node open/close events without saying which node is a
// key and which a value, so rebuilding paths from it is fragile. The `yaml` package keeps a range on
// every node; it is used here only to turn "rules[0].then.decison" into a line number, and only for
// files that have a problem, so loading a good configuration never pays for it.

/** "rules[0].then.decison" → ['rules', 0, 'then', 'decison']. */
export function splitPath(path: string): (string | number)[] {
  const parts: (string | number)[] = [];
  for (const m of path.matchAll(/([^.[\]]+)|\[(\d+)\]/g)) parts.push(m[2] !== undefined ? Number(m[2]) : m[1]!);
  return parts;
}

export interface Locator {
  /**
   * The 1-based line of the deepest part of `path` that exists in the file: the key itself when it
   * is there, else the nearest enclosing key (a missing required field points at its parent).
   */
  line(path: string): number;
}

export function locator(text: string): Locator {
  const counter = new LineCounter();
  let doc: Document | undefined;
  try {
    doc = parseDocument(text, { lineCounter: counter, uniqueKeys: false, strict: false });
  } catch {
    doc = undefined;
  }
  const lineAt = (offset: number | undefined) => (offset === undefined ? 1 : counter.linePos(offset).line);
  const firstLine = () => lineAt((doc?.contents as Node | null)?.range?.[0] ?? 0);

  return {
    line(path) {
      if (!doc) return 1;
      let node: unknown = doc.contents;
      let line = firstLine();
      for (const part of splitPath(path)) {
        if (isAlias(node)) node = node.resolve(doc);
        if (isMap(node)) {
          const pair = node.items.find((p) => (isScalar(p.key) ? String(p.key.value) : String(p.key)) === String(part));
          if (!pair) break;
          line = lineAt((pair.key as Node | null)?.range?.[0]);
          node = pair.value;
        } else if (isSeq(node) && typeof part === 'number') {
          const item = node.items[part] as Node | undefined;
          if (!item) break;
          line = lineAt(item.range?.[0]);
          node = item;
        } else break;
      }
      return line;
    },
  };
}
