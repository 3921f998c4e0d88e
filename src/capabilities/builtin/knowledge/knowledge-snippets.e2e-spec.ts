import { CapabilityRegistry } from '../../capability-registry.service';
import type { StampedContribution, ToolContext } from '../../capability.types';
import { SNIPPET_SOURCE_CHARS } from '../../../knowledge/knowledge.repository';
import { addDocument, buildWith, callTool, contextFor, createAgent, createCollection, resolveResources, toolContext } from '../../../../test/support/builtins';
import { createOrg, createTestApp, TestApp } from '../../../../test/support/test-app';

/**
 * What a search's snippets may cost. ts_headline searched the whole document for covers of the
 * search's own query, which is superlinear in repeated words: one word 71 times (under 500 characters,
 * the most a query holds) took PostgreSQL minutes over a 1 MiB document, and ten such calls held every
 * connection of the node's pool after their tools had timed out (attack round 6). Each statement
 * here may run 10 s (DATABASE_STATEMENT_TIMEOUT_MS), a hundredth of what the old query needed.
 */
describe('knowledge search snippets (e2e)', () => {
  let t: TestApp;
  let built: StampedContribution | null;
  let tc: ToolContext;
  let registry: CapabilityRegistry;

  beforeAll(async () => {
    t = await createTestApp({ config: { databaseStatementTimeoutMs: 10_000 } });
    registry = t.app.get(CapabilityRegistry);
    const org = await createOrg(t, ['knowledge:read']);
    const agent = await createAgent(t, org);
    const collection = await createCollection(t, org, 'Big');
    // About 1 MiB: "common" every other word, 500 other words between them, and one word only past the snippet's source.
    const words = Array.from({ length: 150_000 }, (_, i) => (i % 2 === 0 ? 'common' : `w${i % 500}x`)).join(' ');
    expect(words.length).toBeGreaterThan(900_000);
    await addDocument(t, org, collection, 'Common words', `${words} lateword`);
    const resources = await resolveResources(t, org.id, { knowledgeCollections: [collection] });
    built = await buildWith(registry, 'knowledge', contextFor({ id: org.id, scopes: ['knowledge:read'] }, agent, {}, resources));
    tc = toolContext(org.id, agent.id);
  }, 120_000);
  afterAll(() => t.close());

  const search = (query: string) => callTool(registry, built, 'search_knowledge', { query }, tc);

  it('finds and marks a word repeated as often as a query allows, in a document of a mebibyte', async () => {
    const found = await search(Array.from({ length: 71 }, () => 'common').join(' '));
    expect(found.results).toHaveLength(1);
    expect(found.results[0].snippet).toContain('**common**');
  }, 60_000);

  it('marks every word of a long query that the text holds, each once asked', async () => {
    const found = await search(`common ${Array.from({ length: 60 }, (_, i) => `w${i * 2 + 1}x`).join(' ')}`);
    expect(found.results).toHaveLength(1);
    expect(found.results[0].snippet).toMatch(/\*\*w\d+x\*\*/);
  }, 60_000);

  it(`finds a word past the first ${SNIPPET_SOURCE_CHARS} characters, with a snippet of the opening lines`, async () => {
    const found = await search('lateword');
    expect(found.results).toHaveLength(1);
    expect(found.results[0].snippet).not.toContain('**');
    expect(found.results[0].snippet.startsWith('common w1x common')).toBe(true);
  }, 60_000);
});
