import { eng } from 'stopword';
import type { KeywordItem } from '@repo/schemas';

/** Words the `stopword` English list lacks but that say nothing about a market. */
const EXTRA_STOPWORDS = [
  'its',
  'via',
  'one',
  'two',
  'three',
  'new',
  'say',
  'says',
  'said',
  'use',
  'see',
  'ask',
  'show',
  'tell',
  'hn',
  'per',
  'amp',
  'don',
  'isn',
  'doesn',
  'can',
  'will',
  'just',
  'get',
  'got',
  'how',
  'why',
  'what',
  'anyone',
];
const STOPWORDS = new Set([...eng, ...EXTRA_STOPWORDS]);

/** Keywords kept per scan at most. */
export const MAX_KEYWORDS = 30;
/** A keyword must occur at least this many times. */
export const MIN_KEYWORD_COUNT = 2;

/**
 * The words of a text: lowercase runs of letters and digits (inner apostrophes and hyphens kept);
 * stopwords, one-letter words and numbers are `null` (they break bigrams).
 * @param text a title or summary
 */
export function tokens(text: string): (string | null)[] {
  const words =
    text
      .normalize('NFKC')
      .toLowerCase()
      .match(/[\p{L}\p{N}]+(?:['’-][\p{L}\p{N}]+)*/gu) ?? [];
  return words.map((w) => {
    const word = w.replace(/’/g, "'");
    if (
      word.length < 2 ||
      /^[\p{N}'-]+$/u.test(word) ||
      STOPWORDS.has(word) ||
      STOPWORDS.has(word.split("'")[0] ?? '')
    )
      return null;
    return word;
  });
}

/**
 * Aggregate keyword counts over texts (KeywordItem: "aggregate occurrences"): every occurrence of a
 * word ({@link tokens}) and of two adjacent words (a bigram, within one text, not across a stopword)
 * counts once; keywords occurring fewer than {@link MIN_KEYWORD_COUNT} times are left out; the top
 * `limit` by count, ties alphabetically.
 * @param texts the titles and summaries of the analysed items (each a separate text)
 * @param limit keywords returned at most (default {@link MAX_KEYWORDS})
 */
export function keywordCounts(texts: readonly string[], limit = MAX_KEYWORDS): KeywordItem[] {
  const counts = new Map<string, number>();
  const add = (k: string) => counts.set(k, (counts.get(k) ?? 0) + 1);
  for (const text of texts) {
    const words = tokens(text);
    words.forEach((word, i) => {
      if (word === null) return;
      add(word);
      const next = words[i + 1];
      if (next) add(`${word} ${next}`);
    });
  }
  return [...counts.entries()]
    .filter(([, count]) => count >= MIN_KEYWORD_COUNT)
    .sort(([a, ca], [b, cb]) => cb - ca || (a < b ? -1 : a > b ? 1 : 0))
    .slice(0, limit)
    .map(([keyword, count]) => ({ keyword, count }));
}
