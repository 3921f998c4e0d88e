/**
 * Models write search queries as sentences ("how do I get a refund for a damaged parcel"), and
 * `websearch_to_tsquery` requires every word: one word the text lacks and nothing is found. Tools
 * search with every word first, which ranks precise matches, and fall back to this query, which
 * matches a text containing any of the words; ranking then puts the texts with the most first.
 */

/**
 * The query's words joined by `or` (websearch_to_tsquery syntax), with phrase quotes and
 * exclusions dropped. `null` when that would search for the same thing (fewer than two words).
 */
export function anyWordQuery(query: string): string | null {
  const words = query
    .split(/[\s"]+/)
    .map((w) => w.replace(/^-+/, ''))
    .filter((w) => w !== '' && w.toLowerCase() !== 'or');
  return words.length < 2 ? null : words.join(' or ');
}
