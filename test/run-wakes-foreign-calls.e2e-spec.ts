import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { bearer, createOrg, createTestApp, publishAgent, TestApp, TestOrg } from './support/test-app';

/**
 * A run waiting for approval is looked at again only when one of its calls settles (migration
 * 1764522600000: the trigger clears its `not_before` and counts the wake). The trigger woke the run
 * a settled call's `runId` named whatever the call's entry point, and a REST or MCP call may name
 * any platform run's id (any agent key reads them) without being one of its calls: each such call
 * decided or expired cleared the waiting run's `not_before` and wrote its row, and the run was then
 * probed by every poll of every node until its own approvals were decided, row 30's cost brought
 * back by another runtime's calls (attack round 18, W-F3). Only a run's own calls wake it now.
 */
describe('a waiting run is woken by its own calls only (e2e, attack round 18 W-F3)', () => {
  let t: TestApp;
  let org: TestOrg;
  let ds: DataSource;
  let agentId: string;
  beforeAll(async () => {
    t = await createTestApp({ config: { sweepIntervalMs: 3_600_000 } });
    ds = t.app.get(DataSource);
    org = await createOrg(t, ['memory:write']);
    agentId = await publishAgent(t, org, 'waiting', { instructions: 'x', capabilities: [{ id: 'memory-write' }] });
  });
  afterAll(() => t.close());

  it("a REST call naming a waiting run's id, decided, leaves the run asleep", async () => {
    const runId = randomUUID();
    await ds.query(
      `INSERT INTO run (id, org_id, agent_id, version, status, input, messages, requested_by, not_before)
       VALUES ($1, $2, $3, 1, 'waiting_for_approval', 'x', '[]', $4, now() + interval '1 hour')`,
      [runId, org.id, agentId, org.keyIds.agent],
    );
    const asked = await t.http
      .post(`/api/v1/agents/${agentId}/tool-calls`)
      .set(...bearer(org.keys.agent))
      .send({ tool: 'remember', arguments: { content: 'not the run’s' }, runId })
      .expect(202);
    await t.http
      .post(`/api/v1/approvals/${asked.body.approvalId}/reject`)
      .set(...bearer(org.keys.approver))
      .send({ reason: 'no' })
      .expect(200);

    const [run]: { wakes: number; asleep: boolean }[] = await ds.query(`SELECT wakes, not_before > now() AS asleep FROM run WHERE id = $1`, [runId]);
    // Was woken: wakes 1, not_before cleared.
    expect(run).toEqual({ wakes: 0, asleep: true });
  });
});
