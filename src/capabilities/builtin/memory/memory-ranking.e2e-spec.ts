import { DataSource } from 'typeorm';
import { PROXIMITY_CANDIDATES, RANKED_WORDS_MAX } from '../../../database/text-search';
import { createAgent, memoryTools } from '../../../../test/support/builtins';
import { createOrg, createTestApp, TestApp } from '../../../../test/support/test-app';

/**
 * What ranking recalled memories may cost. ts_rank weighs an AND of words by the distance between
 * every occurrence of each word and every occurrence of each other one: a memory (2,000 characters
 * at most) holding 120 short words four times each took 0.33 ms to rank against a query of those
 * words, 0.04 ms ranked by any of them; an agent may keep 100,000 memories. Each statement here may
 * run 1.5 s; ranked as asked, the 6,000 memories below need about 2 s.
 */
describe('memory recall ranking (e2e)', () => {
  let t: TestApp;
  let tools: Awaited<ReturnType<typeof memoryTools>>;

  // 120 words of three consonants: no stop word, none stemmed into another.
  const letters = 'bcdfghjklmnpqrstvwxz';
  const words = Array.from({ length: 120 }, (_, i) => `${letters[i % 20]}${letters[Math.floor(i / 20) % 20]}${letters[(i * 7) % 20]}`);

  beforeAll(async () => {
    t = await createTestApp({ config: { databaseStatementTimeoutMs: 1_500 } });
    const org = await createOrg(t, ['memory:read', 'memory:write']);
    const agent = await createAgent(t, org);
    tools = await memoryTools(t, org, agent, { memory: { maxResults: 20 }, write: { maxMemories: 100_000 } });
    // What remember keeps, written as an operator would: 6,000 memories of 1,919 characters.
    const text = Array.from({ length: 4 }, () => words.join(' ')).join(' ');
    await t.app.get(DataSource).transaction(async (m) => {
      await m.query(`SET LOCAL statement_timeout = 0`);
      await m.query(
        `INSERT INTO agent_memory (id, org_id, agent_id, content, created_at)
         SELECT gen_random_uuid(), $1, $2, $3, now() - i * interval '1 second' FROM generate_series(1, 6000) AS i`,
        [org.id, agent.id, text],
      );
    });
    // The same words as often, in as long a text: only how near each other they are tells these apart.
    await tools.remember(`refund parcel damaged courier ${'filler '.repeat(60)}`);
    await tools.remember(`refund ${'filler '.repeat(20)} parcel ${'filler '.repeat(20)} damaged ${'filler '.repeat(20)} courier`);
  }, 300_000);
  afterAll(() => t.close());

  it('recalls with a query of 120 words found in 6,000 memories, each holding every word four times', async () => {
    const query = words.join(' ');
    expect(query.length).toBeLessThanOrEqual(500);
    const found = await tools.recall(query);
    expect(found.memories.length + (found.omitted ?? 0)).toBe(20);
    expect(found.memories[0].content.startsWith(query)).toBe(true);
  }, 60_000);

  it(`recalls with a query of ${RANKED_WORDS_MAX} words found in 6,000 memories, only the best ${PROXIMITY_CANDIDATES} ranked by how near each other its words are`, async () => {
    const found = await tools.recall(words.slice(0, RANKED_WORDS_MAX).join(' '));
    expect(found.memories.length + (found.omitted ?? 0)).toBe(20);
  }, 60_000);

  it(`still ranks a query of at most ${RANKED_WORDS_MAX} words by how near each other its words are`, async () => {
    const found = await tools.recall('refund parcel damaged courier');
    expect(found.memories.map((m: { content: string }) => m.content.slice(0, 13))).toEqual(['refund parcel', 'refund filler']);
  }, 60_000);
});
