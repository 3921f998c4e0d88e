import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { CapabilityRegistry } from '../../capability-registry.service';
import { runTool } from '../../../runtime/run-tool';
import { createAgent, inputErrors, memoryTools, TestAgent, toolError } from '../../../../test/support/builtins';
import { createOrg, createTestApp, TestApp, TestOrg } from '../../../../test/support/test-app';

describe('builtin capability: memory-write (e2e)', () => {
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
  const forAgent = (a: TestAgent, o: TestOrg = org, config: { memory?: object; write?: object } = {}) => memoryTools(t, o, a, config);

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
      expect(err.message).toContain('Use `forget` on a memory');
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
        [a.forget(mine.memoryId, a.context(other.id, agent.id)), 'another organization'],
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
      expect(await toolError(a.remember('Misrouted', undefined, a.context(other.id, agent.id)))).toEqual({
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
      const aborted = a.context(org.id, late.id, { signal: controller.signal });
      await expect(a.remember('Written too late', undefined, aborted)).rejects.toThrow('timed out');
      await expect(a.forget(kept.memoryId, aborted)).rejects.toThrow('timed out');
      const rows = await ds.query(`SELECT content FROM agent_memory WHERE org_id = $1 AND agent_id = $2`, [org.id, late.id]);
      expect(rows).toEqual([{ content: 'Kept before the timeout' }]);
    });

    it('reports what a write did when the deadline falls during it: succeeded exactly when the change was made', async () => {
      const racing = await createAgent(t, org);
      const a = await forAgent(racing);
      const implementation = (id: string) => {
        const tool = a.built.write!.tools.find((x) => x.id === id)!;
        return { declaration: { maxOutputTokens: 4000, offloadLargeResults: false }, execute: tool.execute.bind(tool) };
      };
      const context = { orgId: org.id, agentId: racing.id, version: 1, runId: null };
      const ids: string[] = [];
      for (let i = 0; i < 20; i++) ids.push((await a.remember(`Fact ${i}`)).memoryId);
      // Deadlines of 0 to 3 ms fall before, during and after the statement.
      const outcomes = await Promise.all(
        ids.map((memoryId, i) => runTool(implementation('forget'), { memoryId }, { ...context, callId: randomUUID() }, i % 4, () => undefined, a.writes)),
      );
      const left = new Set((await ds.query(`SELECT id FROM agent_memory WHERE agent_id = $1`, [racing.id])).map((r: { id: string }) => r.id));
      ids.forEach((id, i) => expect([id, outcomes[i].status]).toEqual([id, left.has(id) ? 'failed' : 'succeeded']));
      const remembered = await Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          runTool(implementation('remember'), { content: `Late ${i}`, tags: [] }, { ...context, callId: randomUUID() }, i % 4, () => undefined, a.writes),
        ),
      );
      const kept = new Set((await ds.query(`SELECT content FROM agent_memory WHERE agent_id = $1`, [racing.id])).map((r: { content: string }) => r.content));
      remembered.forEach((outcome, i) => expect([i, outcome.status]).toEqual([i, kept.has(`Late ${i}`) ? 'succeeded' : 'failed']));
    });

    it('refuses arguments its schema refuses', () => {
      expect(inputErrors(registry, 'memory-write', 'remember', {})).toEqual(['content']);
      expect(inputErrors(registry, 'memory-write', 'remember', { content: '   ' })).toEqual(['content']);
      expect(inputErrors(registry, 'memory-write', 'remember', { content: 'x'.repeat(2001) })).toEqual(['content']);
      expect(inputErrors(registry, 'memory-write', 'remember', { content: 'x', tags: ['Has Space'] })).toEqual(['tags[0]']);
      // Each bad tag once, at its index: they were two entries at `tags`, one per rule.
      expect(registry.validateToolInput('memory-write', 'remember', { content: 'x', tags: ['ok', 'BAD', 'ok2', 5] }).errors).toEqual([
        { path: 'tags[1]', code: 'matches', message: expect.stringMatching(/^tags\[1\] must match/) },
        { path: 'tags[3]', code: 'isString', message: 'tags[3] must be a string' },
      ]);
      expect(inputErrors(registry, 'memory-write', 'remember', { content: 'x', tags: Array.from({ length: 11 }, (_, i) => `t${i}`) })).toEqual(['tags']);
      expect(inputErrors(registry, 'memory-write', 'forget', { memoryId: 'm-1' })).toEqual(['memoryId']);
    });
  });
});
