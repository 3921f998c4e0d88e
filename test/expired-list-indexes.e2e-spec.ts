import { DataSource } from 'typeorm';
import { scansOf } from './support/plans';
import { bearer, createOrg, createTestApp, publishAgent, TestApp, TestOrg } from './support/test-app';

/**
 * `?status=expired` reads the rows settled as expired and the ones still pending past their expiry,
 * and was one condition no index holds (`status = 'expired' OR (pending AND expiry <= now())`):
 * the planner walked the organization's index filtering, 211 ms a page behind 300,000 newer calls,
 * or scanned every organization's tool calls once the organization had 300,000 calls pending,
 * 313 ms, growing with what any agent key asks for (attack round 15, Q-F2). Each of its two branches
 * is now found through an index holding its condition; the answers are the same.
 */
describe('expired tool calls and approvals listed through an index (e2e)', () => {
  let t: TestApp;
  let org: TestOrg;
  let ds: DataSource;
  let agentId: string;
  beforeAll(async () => {
    // No sweep during the test: a call pending past its expiry stays pending in the table.
    t = await createTestApp({ config: { sweepIntervalMs: 3_600_000 } });
    ds = t.app.get(DataSource);
    org = await createOrg(t, ['memory:read', 'memory:write']);
    agentId = await publishAgent(t, org, 'expiring', { instructions: 'x', capabilities: [{ id: 'memory' }, { id: 'memory-write' }] });
  }, 240_000);
  afterAll(() => t.close());

  const as = (role: keyof TestOrg['keys']) => bearer(org.keys[role]);

  it.each([
    ['tool calls', () => `/api/v1/tool-calls?status=expired`, 'tool_call'],
    ['tool calls of an agent', () => `/api/v1/tool-calls?agentId=${agentId}&status=expired`, 'tool_call'],
    ['approvals', () => `/api/v1/approvals?status=expired`, 'approval'],
    ['approvals of an agent', () => `/api/v1/approvals?agentId=${agentId}&status=expired`, 'approval'],
  ])('%s: every scan finds its rows by status, id or expiry, none walks the organization filtering', async (_what, path, table) => {
    const scans = await scansOf(t, path(), table, { token: org.keys.viewer });
    expect(scans.length).toBeGreaterThan(0);
    for (const scan of scans) {
      expect(scan['Node Type']).toMatch(/Index/);
      // The organization's index alone (`org_id = …`) with the status as a filter is the walk this replaced.
      expect(scan['Index Cond'] ?? '').toMatch(/status|ANY|expires_at|tool_call_id/);
    }
  });

  it('answers the settled and the lapsed ones, newest first, page by page, and nothing else', async () => {
    const ask = async (content: string) =>
      (
        await t.http
          .post(`/api/v1/agents/${agentId}/tool-calls`)
          .set(...as('agent'))
          .send({ tool: 'remember', arguments: { content } })
          .expect(202)
      ).body as { id: string; approvalId: string };
    const lapsed = await ask('lapsed');
    const settled = await ask('settled');
    await t.http
      .post(`/api/v1/agents/${agentId}/tool-calls`)
      .set(...as('agent'))
      .send({ tool: 'recall_memories', arguments: { query: 'x' } })
      .expect(200);
    // Both past their expiry; deciding one settles it as expired, the other stays pending in the table.
    await ds.query(`UPDATE approval SET expires_at = now() - interval '1 minute' WHERE id = ANY ($1::uuid[])`, [[lapsed.approvalId, settled.approvalId]]);
    await ds.query(`UPDATE tool_call SET approval_expires_at = now() - interval '1 minute' WHERE id = ANY ($1::uuid[])`, [[lapsed.id, settled.id]]);
    await t.http
      .post(`/api/v1/approvals/${settled.approvalId}/approve`)
      .set(...as('approver'))
      .send({})
      .expect(409);
    const stored = await ds.query(`SELECT id, status FROM tool_call WHERE id = ANY ($1::uuid[]) ORDER BY created_at`, [[lapsed.id, settled.id]]);
    expect(stored.map((r: { status: string }) => r.status)).toEqual(['pending_approval', 'expired']);
    const waiting = await ask('waiting');

    const pages = async (path: string) => {
      const ids: string[] = [];
      let cursor: string | null = null;
      do {
        const res: { body: { items: { id: string; status: string }[]; nextCursor: string | null } } = await t.http
          .get(`${path}&limit=1${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`)
          .set(...as('viewer'))
          .expect(200);
        ids.push(...res.body.items.map((i) => `${i.id}:${i.status}`));
        cursor = res.body.nextCursor;
      } while (cursor);
      return ids;
    };
    expect(await pages('/api/v1/tool-calls?status=expired')).toEqual([`${settled.id}:expired`, `${lapsed.id}:expired`]);
    expect(await pages(`/api/v1/tool-calls?agentId=${agentId}&status=expired`)).toEqual([`${settled.id}:expired`, `${lapsed.id}:expired`]);
    expect(await pages('/api/v1/approvals?status=expired')).toEqual([`${settled.approvalId}:expired`, `${lapsed.approvalId}:expired`]);
    expect(await pages('/api/v1/tool-calls?status=pending_approval')).toEqual([`${waiting.id}:pending_approval`]);
    expect(await pages('/api/v1/approvals?status=pending')).toEqual([`${waiting.approvalId}:pending`]);
  });
});
