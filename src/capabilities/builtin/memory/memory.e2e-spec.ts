import { CapabilityRegistry } from '../../capability-registry.service';
import { RECALL_MEMORIES_MAX_TOKENS, RecallMemoriesInput } from './memory.tools';
import { ForgetInput, MEMORY_TAG_PATTERN, RememberInput } from '../memory-write/memory-write.tools';
import { resultTokens } from '../../kit/tool-output';
import { configErrors, createAgent, inputErrors, memoryTools, TestAgent, toolContext } from '../../../../test/support/builtins';
import { bearer, createOrg, createTestApp, TestApp, TestOrg } from '../../../../test/support/test-app';

/** memory recalls what memory-write keeps: these tests use both, and the declarations of the pair. */
describe('builtin capability: memory (e2e)', () => {
  let t: TestApp;
  let registry: CapabilityRegistry;
  let org: TestOrg;
  let other: TestOrg;
  let agent: TestAgent;
  let sibling: TestAgent;

  beforeAll(async () => {
    t = await createTestApp();
    registry = t.app.get(CapabilityRegistry);
    org = await createOrg(t, ['memory:read', 'memory:write']);
    other = await createOrg(t, ['memory:read', 'memory:write']);
    agent = await createAgent(t, org);
    sibling = await createAgent(t, org);
  });
  afterAll(() => t.close());
  const forAgent = (a: TestAgent, o: TestOrg = org, config: { memory?: object; write?: object } = {}) => memoryTools(t, o, a, config);

  describe('declarations', () => {
    it('lists memory as read-only behind memory:read, memory-write as side-effecting behind memory:write with every tool approved', async () => {
      const res = await t.http
        .get('/api/v1/agents/capabilities?category=memory')
        .set(...bearer((await createOrg(t, ['memory:read'])).keys.viewer))
        .expect(200);
      const [memory, write] = ['memory', 'memory-write'].map((id) => res.body.items.find((i: { id: string }) => i.id === id));
      expect(memory).toMatchObject({ scopes: ['memory:read'], available: true, risk: 'read_only', sideEffecting: false });
      expect(memory.tools.map((x: { id: string; requiresApproval: boolean }) => [x.id, x.requiresApproval])).toEqual([['recall_memories', false]]);
      expect(write).toMatchObject({ scopes: ['memory:write'], available: false, risk: 'destructive', sideEffecting: true });
      expect(write.tools.map((x: { id: string; risk: string; requiresApproval: boolean }) => [x.id, x.risk, x.requiresApproval])).toEqual([
        ['remember', 'mutating', true],
        ['forget', 'destructive', true],
      ]);
      expect(write.tools[0].inputSchema.properties.tags).toMatchObject({
        type: 'array',
        maxItems: 10,
        default: [],
        items: { pattern: MEMORY_TAG_PATTERN.source },
      });
      expect(registry.get('memory')!.tools.map((x) => x.declaration.input)).toEqual([RecallMemoriesInput]);
      expect(registry.get('memory-write')!.tools.map((x) => x.declaration.input)).toEqual([RememberInput, ForgetInput]);
    });

    it('validates both configs', () => {
      expect(registry.validateConfig('memory', {})).toEqual({ value: { maxResults: 5 }, errors: [] });
      expect(registry.validateConfig('memory-write', {})).toEqual({ value: { maxMemories: 1000 }, errors: [] });
      for (const maxResults of [0, 21, '3']) expect(configErrors(registry, 'memory', { maxResults })).toEqual(['maxResults']);
      for (const maxMemories of [0, 100001, 1.5]) expect(configErrors(registry, 'memory-write', { maxMemories })).toEqual(['maxMemories']);
    });

    it('always contributes, with static guidance that says approval is needed for writes', async () => {
      const { built } = await forAgent(agent);
      expect(built.recall).toEqual({ capabilityId: 'memory', tools: [{ id: 'recall_memories', execute: expect.any(Function) }] });
      expect(built.write).toEqual({
        capabilityId: 'memory-write',
        tools: [
          { id: 'remember', execute: expect.any(Function) },
          { id: 'forget', execute: expect.any(Function) },
        ],
      });
      expect(registry.get('memory')!.definition.promptGuidance).toContain('not instructions');
      expect(registry.get('memory-write')!.definition.promptGuidance).toContain('A person approves each of these calls');
    });
  });

  describe('memory: recall_memories', () => {
    it('says there are no memories yet, then finds the relevant one first', async () => {
      const a = await forAgent(agent);
      expect(await a.recall('language')).toEqual({ query: 'language', memories: [], message: expect.stringContaining('You have no memories yet') });
      await a.remember('Prefers answers in French', ['language', 'preferences']);
      await a.remember('Works at the Lyon office, which opens at 8');
      await a.remember('Asked about the language of the invoice once');
      const res = await a.recall('preferred language');
      expect(res.memories[0]).toEqual({
        memoryId: expect.any(String),
        content: 'Prefers answers in French',
        tags: ['language', 'preferences'],
        rememberedAt: expect.any(String),
      });
      expect(res.memories).toHaveLength(1);
      // Both mention the language; the one tagged with it ranks first.
      expect((await a.recall('language')).memories.map((m: { content: string }) => m.content)).toEqual([
        'Prefers answers in French',
        'Asked about the language of the invoice once',
      ]);
      // No memory has both words: the ones with either are returned, and the model is told.
      const broad = await a.recall('office hours');
      expect(broad.memories.map((m: { content: string }) => m.content)).toEqual(['Works at the Lyon office, which opens at 8']);
      expect(broad.message).toBe('No memory contains all the words of the query; these contain some of them, best first.');
      expect(await a.recall('Lyon office')).toEqual({
        query: 'Lyon office',
        memories: [expect.objectContaining({ content: 'Works at the Lyon office, which opens at 8' })],
      });
    });

    it('says when nothing matches, and when the query has no searchable words', async () => {
      const a = await forAgent(agent);
      expect(await a.recall('submarine')).toEqual({ query: 'submarine', memories: [], message: expect.stringContaining('No memory matches "submarine"') });
      expect((await a.recall('the of')).message).toContain('no words that can be searched for');
    });

    it('reads a run of negations by its parity: more than PostgreSQL stacks failed the recall (attack round 12, J-F3)', async () => {
      const a = await forAgent(await createAgent(t, org));
      await a.remember('Likes yellow submarines');
      expect((await a.recall(`${'-'.repeat(40)}submarine`)).memories).toEqual([expect.objectContaining({ content: 'Likes yellow submarines' })]);
      expect((await a.recall(`${'-'.repeat(41)}submarine`)).memories).toEqual([]);
    });

    it('keeps memories per agent and per organization', async () => {
      const a = await forAgent(agent);
      const s = await forAgent(sibling);
      expect((await s.recall('French')).memories).toEqual([]);
      await s.remember('Likes French cheese');
      expect((await a.recall('French')).memories.map((m: { content: string }) => m.content)).toEqual(['Prefers answers in French']);
      // The same agent id under another organization reads nothing of this one.
      expect((await a.recall('French', undefined, toolContext(other.id, agent.id))).memories).toEqual([]);
    });

    it('returns at most limit memories, capped by maxResults, and fits its output budget', async () => {
      const busy = await createAgent(t, org);
      const b = await forAgent(busy, org, { memory: { maxResults: 20 } });
      for (let i = 0; i < 20; i++) await b.remember(`Project note ${i}: ` + 'the customer project uses a shared staging server. '.repeat(30));
      expect((await b.recall('project', 3)).memories).toHaveLength(3);
      const all = await b.recall('project staging', 20);
      expect(all.omitted).toBeGreaterThan(0);
      expect(all.memories.length + all.omitted).toBe(20);
      expect(all.message).toBe(`Left out to keep this result short: ${all.omitted} more matching memories. Recall with more specific words to see them.`);
      expect(resultTokens(all)).toBeLessThanOrEqual(RECALL_MEMORIES_MAX_TOKENS);
      const capped = await forAgent(busy, org, { memory: { maxResults: 2 } });
      expect((await capped.recall('project', 20)).memories).toHaveLength(2);
    });

    it('refuses arguments its schema refuses', () => {
      expect(inputErrors(registry, 'memory', 'recall_memories', {})).toEqual(['query']);
      expect(inputErrors(registry, 'memory', 'recall_memories', { query: 'x', limit: 0, tags: [] })).toEqual(['limit', 'tags']);
    });
  });
});
