import { DataSource } from 'typeorm';
import { KnowledgeRepository } from '../src/knowledge/knowledge.repository';
import { addDocument, createCollection } from './support/builtins';
import { bearer, createOrg, createTestApp, TestApp } from './support/test-app';

/**
 * Attack round 16, T-F4: every build of a version (every tool call of the agent, REST or MCP, even
 * one naming no tool it offers) read the names and descriptions of every collection the version
 * binds: 200 collections of 2,000-character descriptions of 4-byte characters are 1.76 MB a call.
 * One agent key calling a tool eight at a time (37 calls a second) took another organization's
 * `GET /agents` from p50 18 ms to 140 ms. A collection's name and description never change once it
 * is made, so a node reads them once; its document count, and whether it still exists, every time.
 */
describe('knowledge collections resolved for a build (e2e, attack round 16 T-F4)', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(() => t.close());

  it("reads a collection's name and description once, its document count and existence every time", async () => {
    const org = await createOrg(t, ['knowledge:read']);
    const other = await createOrg(t, ['knowledge:read']);
    const a = await createCollection(t, org, 'Handbook', 'Refunds and shipping');
    const b = await createCollection(t, org, 'Policies', 'What we promise');
    const knowledge = t.app.get(KnowledgeRepository);
    const query = jest.spyOn(t.app.get(DataSource), 'query');
    const texts = () =>
      query.mock.calls
        .filter(([sql]) => String(sql).includes('FROM knowledge_collection c WHERE c.org_id = $1 AND c.id = ANY($2::uuid[])'))
        .map(([, params]) => params);
    try {
      expect(await knowledge.resolve(org.id, [b, a])).toEqual([
        { id: b, name: 'Policies', description: 'What we promise', documentCount: 0 },
        { id: a, name: 'Handbook', description: 'Refunds and shipping', documentCount: 0 },
      ]);
      // Nothing kept yet: both read whole.
      expect(texts()).toEqual([[org.id, [b, a], []]]);
      await addDocument(t, org, a, 'Refunds', 'Five days.');
      expect(await knowledge.resolve(org.id, [a, b])).toEqual([
        { id: a, name: 'Handbook', description: 'Refunds and shipping', documentCount: 1 },
        { id: b, name: 'Policies', description: 'What we promise', documentCount: 0 },
      ]);
      // Kept: asked for their counts alone.
      expect(texts()[1]).toEqual([org.id, [a, b], [a, b]]);
      // Another organization asking for these ids finds nothing, kept or not.
      expect(await knowledge.resolve(other.id, [a, b])).toEqual([]);
    } finally {
      query.mockRestore();
    }
    await t.http
      .delete(`/api/v1/knowledge/collections/${b}`)
      .set(...bearer(org.keys.builder))
      .expect(204);
    expect(await knowledge.resolve(org.id, [a, b])).toEqual([{ id: a, name: 'Handbook', description: 'Refunds and shipping', documentCount: 1 }]);
  });
});
