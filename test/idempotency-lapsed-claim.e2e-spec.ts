import { DataSource } from 'typeorm';
import { RunStorageRepository } from '../src/runtime/run-storage.repository';
import { ToolCallSweeper } from '../src/tool-calls/tool-call-sweeper.service';
import { bearer, createOrg, createTestApp, publishAgent, TestApp, TestOrg } from './support/test-app';

/**
 * A key's claim lapses after TOOL_TIMEOUT_MS plus TOOL_LEASE_GRACE_SECONDS so that a key whose
 * request died is not held for good, and a retry then takes it over. A request that was only slow
 * (a stale MCP list listed again first, a queue for the database) went on after that, and recorded
 * its call too: two approvals of one side effect under one key, each of which an approver may
 * grant (attack round 18, W-F2). A request that lost its claim now records nothing.
 */
describe('a claim taken over while its request was still under way', () => {
  let t: TestApp;
  let org: TestOrg;
  let agentId: string;
  // The lock of a claim: short, so that the test need not wait 90 s for it to lapse.
  const LEASE_MS = 300;

  beforeAll(async () => {
    t = await createTestApp({ config: { toolTimeoutMs: LEASE_MS / 2, toolLeaseGraceMs: LEASE_MS / 2 } });
    await t.app.get(ToolCallSweeper).stop();
    org = await createOrg(t, ['memory:write']);
    agentId = await publishAgent(t, org, 'lapsed-claim', { instructions: 'x', capabilities: [{ id: 'memory-write' }] });
  });
  afterAll(() => t.close());

  const remember = (content: string) =>
    t.http
      .post(`/api/v1/agents/${agentId}/tool-calls`)
      .set(...bearer(org.keys.agent))
      .set('Idempotency-Key', `key-${content}`)
      .send({ tool: 'remember', arguments: { content } });

  it('records one call and one approval for the key: the slow first request answers 409 idempotency_in_progress, the retry the call', async () => {
    const storage = t.app.get(RunStorageRepository);
    const count = storage.pendingApprovals.bind(storage);
    let reached!: () => void;
    const inGuards = new Promise<void>((resolve) => (reached = resolve));
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    // The first request is held in its guards, after it claimed the key and before it records anything.
    jest.spyOn(storage, 'pendingApprovals').mockImplementationOnce(async (orgId, upTo) => {
      reached();
      await held;
      return count(orgId, upTo);
    });

    const first = remember('pay-42').then((r) => r);
    await inGuards;
    await new Promise((resolve) => setTimeout(resolve, LEASE_MS * 2));
    const retry = await remember('pay-42');
    expect(retry.status).toBe(202);
    release();
    const late = await first;

    expect(late.status).toBe(409);
    expect(late.body.code).toBe('idempotency_in_progress');
    const ds = t.app.get(DataSource);
    const calls: { id: string }[] = await ds.query(`SELECT c.id FROM tool_call c JOIN approval a ON a.tool_call_id = c.id WHERE c.org_id = $1`, [org.id]);
    expect(calls.map((c) => c.id)).toEqual([retry.body.id]);
    // The key answers the call it recorded.
    const replay = await remember('pay-42').expect(202);
    expect(replay.body.id).toBe(retry.body.id);
    expect(replay.headers['idempotent-replayed']).toBe('true');
  });
});
