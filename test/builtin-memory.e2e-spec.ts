import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { CapabilityRegistry } from '../src/capabilities/capability-registry.service';
import type { StampedContribution, ToolContext } from '../src/capabilities/capability.types';
import { RECALL_MEMORIES_MAX_TOKENS, RecallMemoriesInput } from '../src/capabilities/builtin/memory/memory.tools';
import { ForgetInput, MEMORY_TAG_PATTERN, RememberInput } from '../src/capabilities/builtin/memory-write/memory-write.tools';
import { resultTokens } from '../src/capabilities/tool-output';
import { buildWith, callTool, configErrors, contextFor, createAgent, inputErrors, TestAgent, toolContext, toolError } from './support/builtins';
import { bearer, createOrg, createTestApp, TestApp, TestOrg } from './support/test-app';

describe('builtin capabilities: memory and memory-write (e2e)', () => {
  let t: TestApp;
  let ds: DataSource;
  let registry: CapabilityRegistry;
  let org: TestOrg;
  let other: TestOrg;
  let agent: TestAgent;
  let sibling: TestAgent;

  beforeAll(async () => {
    t = await createTestApp();
    ds = t.app.get(DataSource);
    registry = t.app.get(CapabilityRegistry);
    org = await createOrg(t, ['memory:read', 'memory:write']);
    other = await createOrg(t, ['memory:read', 'memory:write']);
    agent = await createAgent(t, org);
    sibling = await createAgent(t, org);
  });
  afterAll(() => t.close());

  /** Both capabilities built for one agent, and its tool context. */
  async function forAgent(a: TestAgent, o: TestOrg = org, config: { memory?: object; write?: object } = {}) {
    const recall = await buildWith(registry, 'memory', contextFor(o, a, config.memory ?? {}));
    const write = await buildWith(registry, 'memory-write', contextFor(o, a, config.write ?? {}));
    const tc = toolContext(o.id, a.id);
    return {
      tc,
      recall: (query: string, limit?: number, ctx: ToolContext = tc) =>
        callTool(registry, recall, 'recall_memories', limit === undefined ? { query } : { query, limit }, ctx),
      remember: (content: string, tags?: string[], ctx: ToolContext = tc) =>
        callTool(registry, write, 'remember', tags === undefined ? { content } : { content, tags }, ctx),
      forget: (memoryId: string, ctx: ToolContext = tc) => callTool(registry, write, 'forget', { memoryId }, ctx),
      built: { recall, write } as { recall: StampedContribution | null; write: StampedContribution | null },
    };
  }

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

  describe('memory-write: remember and forget', () => {
    it('remembers a fact with its tags, trimmed and without duplicates, and says when it is already remembered', async () => {
      const fresh = await createAgent(t, org);
      const a = await forAgent(fresh);
      const first = await a.remember('  Invoices go to billing@example.com  ', ['billing', 'billing', 'contact']);
      expect(first).toEqual({
        memoryId: expect.any(String),
        content: 'Invoices go to billing@example.com',
        tags: ['billing', 'contact'],
        rememberedAt: expect.any(String),
        alreadyRemembered: false,
        memoriesKept: 1,
        maxMemories: 1000,
      });
      const again = await a.remember('Invoices go to billing@example.com', ['other']);
      expect(again).toEqual({ ...first, alreadyRemembered: true, memoriesKept: undefined });
      expect(again).not.toHaveProperty('memoriesKept');
      const [{ n }] = await ds.query(`SELECT count(*)::int AS n FROM agent_memory WHERE org_id = $1 AND agent_id = $2`, [org.id, fresh.id]);
      expect(n).toBe(1);
      expect((await a.recall('billing')).memories[0].memoryId).toBe(first.memoryId);
    });

    it('refuses to remember past maxMemories with an error the model can act on, then accepts after a forget', async () => {
      const small = await createAgent(t, org);
      const a = await forAgent(small, org, { write: { maxMemories: 2 } });
      const one = await a.remember('First fact');
      expect((await a.remember('Second fact')).memoriesKept).toBe(2);
      const err = await toolError(a.remember('Third fact'));
      expect(err).toEqual({
        code: 'memory_full',
        message: expect.stringContaining('You keep 2 memories, and the most you may keep is 2, so nothing was remembered'),
      });
      expect(err.message).toContain('Forget a memory');
      expect(await a.forget(one.memoryId)).toEqual({ memoryId: one.memoryId, forgotten: true, content: 'First fact' });
      expect((await a.remember('Third fact')).memoriesKept).toBe(2);
    });

    it('holds the limit under concurrent remembers for one agent', async () => {
      const racer = await createAgent(t, org);
      const a = await forAgent(racer, org, { write: { maxMemories: 3 } });
      const outcomes = await Promise.allSettled(Array.from({ length: 8 }, (_, i) => a.remember(`Concurrent fact ${i}`)));
      expect(outcomes.filter((o) => o.status === 'fulfilled')).toHaveLength(3);
      for (const o of outcomes.filter((x) => x.status === 'rejected')) expect((o as PromiseRejectedResult).reason.code).toBe('memory_full');
      const [{ n }] = await ds.query(`SELECT count(*)::int AS n FROM agent_memory WHERE org_id = $1 AND agent_id = $2`, [org.id, racer.id]);
      expect(n).toBe(3);
    });

    it('forgets only a memory of this agent in this organization', async () => {
      const a = await forAgent(agent);
      const s = await forAgent(sibling);
      const mine = await a.remember('Temporary fact to forget');
      for (const [call, label] of [
        [s.forget(mine.memoryId), 'another agent'],
        [a.forget(mine.memoryId, toolContext(other.id, agent.id)), 'another organization'],
        [a.forget(randomUUID()), 'no such memory'],
      ] as const) {
        expect({ label, err: await toolError(call) }).toEqual({
          label,
          err: { code: 'memory_not_found', message: expect.stringContaining('nothing was forgotten') },
        });
      }
      expect((await a.forget(mine.memoryId)).forgotten).toBe(true);
      expect((await toolError(a.forget(mine.memoryId))).code).toBe('memory_not_found');
    });

    it('refuses to remember for an agent that is not in the calling organization', async () => {
      const a = await forAgent(agent);
      expect(await toolError(a.remember('Misrouted', undefined, toolContext(other.id, agent.id)))).toEqual({
        code: 'agent_not_found',
        message: expect.stringContaining('nothing was remembered'),
      });
    });

    it('writes nothing once the call has been aborted (timed out)', async () => {
      const late = await createAgent(t, org);
      const a = await forAgent(late);
      const kept = await a.remember('Kept before the timeout');
      const controller = new AbortController();
      controller.abort(new Error('timed out'));
      const aborted = toolContext(org.id, late.id, { signal: controller.signal });
      await expect(a.remember('Written too late', undefined, aborted)).rejects.toThrow('timed out');
      await expect(a.forget(kept.memoryId, aborted)).rejects.toThrow('timed out');
      const rows = await ds.query(`SELECT content FROM agent_memory WHERE org_id = $1 AND agent_id = $2`, [org.id, late.id]);
      expect(rows).toEqual([{ content: 'Kept before the timeout' }]);
    });

    it('refuses arguments its schema refuses', () => {
      expect(inputErrors(registry, 'memory-write', 'remember', {})).toEqual(['content']);
      expect(inputErrors(registry, 'memory-write', 'remember', { content: '   ' })).toEqual(['content']);
      expect(inputErrors(registry, 'memory-write', 'remember', { content: 'x'.repeat(2001) })).toEqual(['content']);
      expect(inputErrors(registry, 'memory-write', 'remember', { content: 'x', tags: ['Has Space'] })).toEqual(['tags']);
      expect(inputErrors(registry, 'memory-write', 'remember', { content: 'x', tags: Array.from({ length: 11 }, (_, i) => `t${i}`) })).toEqual(['tags']);
      expect(inputErrors(registry, 'memory-write', 'forget', { memoryId: 'm-1' })).toEqual(['memoryId']);
    });
  });
});
