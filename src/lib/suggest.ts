// "Did you mean": a typo is the usual cause of an unknown name, so the nearest known one is named.

/** The candidate nearest to `word` by edit distance (case ignored), if one is near enough to be the one meant. */
export function closest(word: string, candidates: Iterable<string>): string | undefined {
  let best: string | undefined;
  let bestDistance = Math.max(2, Math.floor(word.length / 3)) + 1;
  for (const c of candidates) {
    const d = editDistance(word.toLowerCase(), c.toLowerCase());
    if (d < bestDistance) [best, bestDistance] = [c, d];
  }
  return best;
}

/** ` (did you mean "x"?)` for the nearest candidate, or nothing. */
export const didYouMean = (word: string, candidates: Iterable<string>): string => {
  const best = closest(word, candidates);
  return best ? ` (did you mean "${best}"?)` : '';
};

function editDistance(a: string, b: string): number {
  let row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const next = [i];
    for (let j = 1; j <= b.length; j++) next[j] = Math.min(row[j]! + 1, next[j - 1]! + 1, row[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    row = next;
  }
  return row[b.length]!;
}
