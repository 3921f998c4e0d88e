import { CapabilityRegistry } from '../../capability-registry.service';
import type { StampedContribution, ToolContext } from '../../capability.types';
import { DataSource } from 'typeorm';
import { PROXIMITY_CANDIDATES, RANKED_WORDS_MAX } from '../../../database/text-search';
import { addDocument, buildWith, callTool, contextFor, createAgent, createCollection, resolveResources, toolContext } from '../../../../test/support/builtins';
import { createOrg, createTestApp, TestApp } from '../../../../test/support/test-app';

/**
 * What ranking a search may cost. ts_rank weighs an AND of words by the distance between every
 * occurrence of each word and every occurrence of each other one: a query of 120 short words (under
 * the 500 characters a query holds) over documents holding each of them 256 times took 1.6 s of
 * the database a document, 32 s for 20 such documents of 125 KB (attack round 14, N-F2). Each
 * statement here may run 10 s (DATABASE_STATEMENT_TIMEOUT_MS); the old ranking needed minutes.
 */
describe('knowledge search ranking (e2e)', () => {
  let t: TestApp;
  let built: StampedContribution | null;
  let tc: ToolContext;
  let registry: CapabilityRegistry;

  // 120 words of three consonants: no stop word, none stemmed into another.
  const letters = 'bcdfghjklmnpqrstvwxz';
  const words = Array.from({ length: 120 }, (_, i) => `${letters[i % 20]}${letters[Math.floor(i / 20) % 20]}${letters[(i * 7) % 20]}`);

  beforeAll(async () => {
    t = await createTestApp({ config: { databaseStatementTimeoutMs: 10_000 } });
    registry = t.app.get(CapabilityRegistry);
    const org = await createOrg(t, ['knowledge:read']);
    const agent = await createAgent(t, org);
    const collection = await createCollection(t, org, 'Many words');
    // Each word 260 times (a search index keeps 256 places of a word): about 125 KB.
    const text = Array.from({ length: 260 }, () => words.join(' ')).join('\n');
    for (let i = 0; i < 40; i++) await addDocument(t, org, collection, `Words ${i}`, text);
    // The same words as often, in as long a text: only how near each other they are tells these apart.
    await addDocument(t, org, collection, 'Near', `refund parcel damaged courier ${'filler '.repeat(600)}`);
    await addDocument(t, org, collection, 'Far', `refund ${'filler '.repeat(200)} parcel ${'filler '.repeat(200)} damaged ${'filler '.repeat(200)} courier`);
    // 1,500 documents holding eight words 260 times each (8 KB), written as an operator would: an
    // eight-word search ranked as asked took 21 ms a document (31 s), ranked by any word 0.05 ms.
    const eight = Array.from({ length: 260 }, () => words.slice(0, 8).join(' ')).join(' ');
    await t.app
      .get(DataSource)
      .query(
        `INSERT INTO knowledge_document (id, org_id, collection_id, title, content) SELECT gen_random_uuid(), $1, $2, 'Eight ' || i, $3 FROM generate_series(1, 1500) AS i`,
        [org.id, collection, eight],
      );
    const resources = await resolveResources(t, org.id, { knowledgeCollections: [collection] });
    built = await buildWith(registry, 'knowledge', contextFor({ id: org.id, scopes: ['knowledge:read'] }, agent, { maxResults: 20 }, resources));
    tc = toolContext(org.id, agent.id);
  }, 300_000);
  afterAll(() => t.close());

  const search = (query: string) => callTool(registry, built, 'search_knowledge', { query }, tc);

  it('ranks a query of 120 words found in 40 of 1,540 documents, each holding every word 256 times', async () => {
    expect(new Set(words).size).toBe(120);
    const query = words.join(' ');
    expect(query.length).toBeLessThanOrEqual(500);
    const found = await search(query);
    expect(found.results.length + (found.omitted ?? 0)).toBe(20);
    expect(found.results[0].snippet).toMatch(/\*\*[a-z]{3}\*\*/);
  }, 120_000);

  it(`ranks a query of ${RANKED_WORDS_MAX} words found in 1,540 documents, only the best ${PROXIMITY_CANDIDATES} by how near each other its words are`, async () => {
    const found = await search(words.slice(0, RANKED_WORDS_MAX).join(' '));
    expect(found.results.length + (found.omitted ?? 0)).toBe(20);
  }, 120_000);

  it(`still ranks a query of at most ${RANKED_WORDS_MAX} words by how near each other its words are`, async () => {
    const found = await search('refund parcel damaged courier');
    expect(found.results.map((r: { title: string }) => r.title)).toEqual(['Near', 'Far']);
    expect(found.results[0].score).toBeGreaterThan(found.results[1].score);
  }, 60_000);
});
