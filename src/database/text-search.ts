/**
 * Ranking full-text matches without the time ts_rank takes over an AND of many words.
 *
 * ts_rank weighs an AND (or a phrase) by the distance between each occurrence of each of its words
 * and each occurrence of every other (words² × 256² a text at most): a query of 120 short words
 * took 1.6 s a knowledge document (32 s for 20 documents of 125 KB), one of 8 words 21 ms and one
 * of 2 words 1.1 ms, against 0.05 ms ranked by any of the words (attack round 14, N-F2); a memory
 * of 2,000 characters holding 120 words four times each 0.33 ms against 0.04 ms (so 33 s against
 * 4 s for an agent keeping 100,000 of them). So every match is ranked by its words, any of them
 * (how often, where: linear in the text), and only the best PROXIMITY_CANDIDATES are ranked again
 * as asked, by how near each other the words are, and only for a query of at most RANKED_WORDS_MAX
 * distinct words. Which texts match is the caller's `@@ query`, unchanged.
 */

import type { DataSource } from 'typeorm';
import { OrgGate } from '../common/org-gate';

/** The part of the pool's connections one organization's full-text searches (knowledge and memories together) may hold at once on a node (at least one). */
export const SEARCHES_SHARE_OF_POOL = 1 / 4;

const turns = new WeakMap<DataSource, OrgGate>();

/**
 * The turns of an organization's full-text searches on this node, one set per database: a search
 * ranks every match, so its time grows with what the organization stores (a `search_knowledge`
 * at 1 GiB of documents about 3.7 s, row 53; a `recall_memories` over an agent's 100,000 memories
 * 1.7 s), and the pool is every organization's. `search_knowledge` and `recall_memories` take
 * their turns here together: twelve recalls of one agent at once held the whole pool of ten, and
 * another organization's `GET /agents` waited up to 7.6 s (attack round 16, T-F2).
 */
export function searchTurns(dataSource: DataSource, poolSize: number): OrgGate {
  let gate = turns.get(dataSource);
  if (!gate) turns.set(dataSource, (gate = new OrgGate(Math.max(1, Math.floor(poolSize * SEARCHES_SHARE_OF_POOL)))));
  return gate;
}

/** The most distinct words a search is ranked by as it was asked (all of them, near each other); a longer one is ranked by any of its words. */
export const RANKED_WORDS_MAX = 8;

/** The best matches by their words alone that are ranked again by how near each other the words are. */
export const PROXIMITY_CANDIDATES = 50;

/**
 * A FROM item `(…) AS <alias>` of one row: `query`, the search as asked
 * (`websearch_to_tsquery`); `words`, its distinct words; `marks`, those words each once, any of
 * them (`'a' | 'b'`), which ts_rank and ts_headline read in time linear in the text. `param` is
 * the statement's parameter holding the search (`$3`).
 */
export function searchTerms(param: string, alias: string): string {
  return `(SELECT websearch_to_tsquery('english'::regconfig, ${param}) AS query,
                  length(to_tsvector('english'::regconfig, ${param})) AS words,
                  (SELECT string_agg('''' || replace(replace(l, '\\', '\\\\'), '''', '''''') || '''', ' | ')::tsquery
                     FROM unnest(tsvector_to_array(to_tsvector('english'::regconfig, ${param}))) AS w(l)) AS marks) AS ${alias}`;
}

/**
 * The rank of a candidate already among the best PROXIMITY_CANDIDATES by `marks`: the query as
 * asked for a short one, its words alone for a longer one. `terms` is searchTerms' alias (or the
 * alias its columns were carried through), `normalization` ts_rank's.
 */
export function proximityRank(search: string, terms: string, normalization: number): string {
  return `ts_rank(${search}, CASE WHEN ${terms}.words > ${RANKED_WORDS_MAX} THEN ${terms}.marks ELSE ${terms}.query END, ${normalization})`;
}
