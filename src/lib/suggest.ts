// "Did you mean": a typo is the usual cause of an unknown name, so the nearest known one is named.
import { distance } from 'fastest-levenshtein';

/** The candidate nearest to `word` by edit distance (case ignored), if one is near enough to be the one meant. */
export function closest(word: string, candidates: Iterable<string>): string | undefined {
  let best: string | undefined;
  let bestDistance = Math.max(2, Math.floor(word.length / 3)) + 1;
  const lower = word.toLowerCase();
  for (const c of candidates) {
    const d = distance(lower, c.toLowerCase());
    if (d < bestDistance) [best, bestDistance] = [c, d];
  }
  return best;
}

/** ` (did you mean "x"?)` for the nearest candidate, or nothing. */
export const didYouMean = (word: string, candidates: Iterable<string>): string => {
  const best = closest(word, candidates);
  return best ? ` (did you mean "${best}"?)` : '';
};
