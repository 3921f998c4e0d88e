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

/**
 * Three or more dashes in a row, apart only by characters that are not part of a word or a phrase
 * (a superset of what `websearch_to_tsquery` skips between them: white space and `!&()<|` here).
 */
const NEGATION_RUN = /-(?:[^\p{L}\p{N}\p{M}"]*-){2,}/gu;

/**
 * The query with every run of three or more negations (`---refund`, `- - - refund`) written as
 * one or two, the same parity: `websearch_to_tsquery` stacks a NOT per dash, and past 32 in a row
 * the statement fails ("tsquery stack too small", an internal error), so a model's query of 33
 * dashes failed its search as "failed unexpectedly" (attack round 12, J-F3). A space goes first,
 * so the dashes never join the word before them into a hyphenated one.
 */
export function boundedNegations(query: string): string {
  return query.replace(NEGATION_RUN, (run) => (run.split('-').length % 2 === 0 ? ' -' : ' --'));
}
