import { DataSource } from 'typeorm';
import { CapabilityRegistry } from '../src/capabilities/capability-registry.service';
import { addDocument, buildWith, callTool, contextFor, createAgent, createCollection, memoryTools, resolveResources, toolContext } from './support/builtins';
import { createOrg, createTestApp, TestApp } from './support/test-app';

/**
 * Attack round 16, T-F2: `recall_memories` ranks every memory of the agent that matches (1.7 s over
 * 100,000 memories of 120 words, about what MEMORY_MAX_BYTES_PER_ORG lets one agent keep), and
 * unlike `search_knowledge` (row 53) took no turn: twelve recalls of one agent key at once held the
 * node's whole pool of ten connections for 16 s, and another organization's `GET /agents` waited
 * up to 7.6 s. An organization's recalls and knowledge searches now take their turns together, a
 * quarter of the pool at most (two of ten); the rest wait holding no connection.
 */
describe('memory recalls take turns with knowledge searches (e2e, attack round 16 T-F2)', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await createTestApp({ config: { databasePoolSize: 10 } });
  });
  afterAll(() => t.close());

  it("holds at most a quarter of the pool for one organization's recalls and searches; another organization's recall does not wait", async () => {
    const scopes = ['memory:read', 'memory:write', 'knowledge:read'];
    const org = await createOrg(t, scopes);
    const other = await createOrg(t, scopes);
    const agent = await createAgent(t, org);
    const mine = await memoryTools(t, org, agent);
    const theirs = await memoryTools(t, other, await createAgent(t, other));
    await mine.remember('Prefers answers in French');
    await theirs.remember('Prefers answers in French');
    const registry = t.app.get(CapabilityRegistry);
    const collection = await createCollection(t, org, 'Handbook');
    await addDocument(t, org, collection, 'Refunds', 'Refunds take five days.');
    const resources = await resolveResources(t, org.id, { knowledgeCollections: [collection] });
    const knowledge = await buildWith(registry, 'knowledge', contextFor({ id: org.id, scopes }, agent, {}, resources));

    // Every search statement waits here until released, so what runs at once can be counted.
    const ds = t.app.get(DataSource);
    const query = ds.query.bind(ds);
    const running = { [org.id]: 0, [other.id]: 0 };
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    const spy = jest.spyOn(ds, 'query').mockImplementation(async (sql: string, params?: Parameters<DataSource['query']>[1]) => {
      if (/FROM agent_memory m,|FROM knowledge_document d,/.test(sql)) {
        running[String((params as unknown[])[0])]++;
        await released;
      }
      return query(sql, params);
    });
    try {
      const recalls = Array.from({ length: 8 }, () => mine.recall('French answers'));
      const search = callTool(registry, knowledge, 'search_knowledge', { query: 'refunds' }, toolContext(org.id, agent.id));
      const theirRecall = theirs.recall('French answers');
      for (let i = 0; i < 1000 && running[other.id] === 0; i++) await new Promise((r) => setImmediate(r));
      expect(running[other.id]).toBe(1);
      expect(running[org.id]).toBe(2);
      release();
      const answers = await Promise.all(recalls);
      for (const a of answers) expect(a.memories[0].content).toBe('Prefers answers in French');
      expect((await search).results[0].title).toBe('Refunds');
      expect((await theirRecall).memories).toHaveLength(1);
    } finally {
      release();
      spy.mockRestore();
    }
  });
});
