import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { ToolCallSweeper } from '../src/tool-calls/tool-call-sweeper.service';
import { bearer, createOrg, createTestApp, publishAgent, TestApp, TestOrg } from './support/test-app';

/**
 * Attack round 13, M-F4: each node's sweep removed at most 1,000 idempotency keys past their 24
 * hours and expired at most 500 approvals every SWEEP_INTERVAL_SECONDS (15 s: 4,000 keys and 2,000
 * approvals a minute), for every organization together, while one organization's keys may ask for
 * 6,000 calls a minute on each node (RATE_LIMIT_PER_ORG), each with a key and, for a side effect,
 * an approval. The keys (each holding its whole first answer) then piled up for good, and every
 * organization's approvals waited behind one organization's to be marked expired, audited and
 * delivered. A sweep now goes on while its batches come back full, up to a bound of its own.
 */
describe('a sweep keeps up with what organizations may write (e2e, attack round 13 M-F4)', () => {
  let t: TestApp;
  let org: TestOrg;
  let ds: DataSource;
  let agentId: string;
  beforeAll(async () => {
    t = await createTestApp({ config: { sweepIntervalMs: 3_600_000 } });
    ds = t.app.get(DataSource);
    org = await createOrg(t, ['memory:write']);
    agentId = await publishAgent(t, org, 'flood', { instructions: 'x', capabilities: [{ id: 'memory-write' }] });
  });
  afterAll(() => t.close());

  it('removes every expired idempotency key and expires every approval past its time, however many, in one sweep', async () => {
    await ds.query(
      `INSERT INTO idempotency_key (org_id, agent_id, key, request_hash, claim_id, status, response_status, response_body, locked_until, expires_at)
       SELECT $1, $2, 'k-' || g, 'h', gen_random_uuid(), 'done', 200, '{}', now() - interval '2 days', now() - interval '1 hour'
         FROM generate_series(1, 2500) g`,
      [org.id, agentId],
    );
    await ds.query(
      `INSERT INTO tool_call (id, org_id, agent_id, version, tool, capability_id, tool_id, entry_point, arguments, arguments_hash, status,
                              approval_id, approval_expires_at, requested_by)
       SELECT gen_random_uuid(), $1, $2, 1, 'remember', 'memory-write', 'remember', 'rest', '{}', 'h', 'pending_approval',
              gen_random_uuid(), now() - interval '1 minute', $3
         FROM generate_series(1, 1200)`,
      [org.id, agentId, org.keyIds.agent],
    );
    await ds.query(
      `INSERT INTO approval (id, org_id, tool_call_id, agent_id, version, tool, capability_id, tool_id, arguments_hash, reason, status, requested_by, expires_at)
       SELECT approval_id, org_id, id, agent_id, 1, tool, capability_id, tool_id, 'h', 'side_effecting', 'pending', requested_by, approval_expires_at
         FROM tool_call WHERE org_id = $1 AND status = 'pending_approval'`,
      [org.id],
    );
    // One that is not due stays.
    const live = await t.http
      .post(`/api/v1/agents/${agentId}/tool-calls`)
      .set(...bearer(org.keys.agent))
      .set('Idempotency-Key', randomUUID())
      .send({ tool: 'remember', arguments: { content: 'Keeps bees' } })
      .expect(202);

    const report = await t.app.get(ToolCallSweeper).sweepOnce();
    expect({ keysDeleted: report.keysDeleted, expired: report.expired }).toEqual({ keysDeleted: 2500, expired: 1200 });
    const [left]: { keys: number; pending: number; events: number }[] = await ds.query(
      `SELECT (SELECT count(*) FROM idempotency_key WHERE org_id = $1)::int AS keys,
              (SELECT count(*) FROM approval WHERE org_id = $1 AND status = 'pending')::int AS pending,
              (SELECT count(*) FROM audit_event WHERE org_id = $1 AND type = 'approval.expired')::int AS events`,
      [org.id],
    );
    expect(left).toEqual({ keys: 1, pending: 1, events: 1200 });
    const [call]: { status: string }[] = await ds.query(`SELECT status FROM tool_call WHERE id = $1`, [live.body.id]);
    expect(call.status).toBe('pending_approval');
  });
});
