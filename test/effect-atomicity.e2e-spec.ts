import { DataSource } from 'typeorm';
import { CallTransaction } from '../src/tool-calls/call-transaction';
import { INTERRUPTED_MESSAGE, INTERRUPTED_UPSTREAM_MESSAGE } from '../src/tool-calls/tool-call-rows';
import { ToolCallSweeper } from '../src/tool-calls/tool-call-sweeper.service';
import { bearer, createOrg, createTestApp, TestApp, TestOrg } from './support/test-app';

/**
 * An approved built-in's write to the product's own database commits with its call's outcome and
 * audit event, or not at all (session 28, finding c1). Before, `remember` committed its memory in
 * a transaction of its own and the outcome was written after it: a process that died in between
 * (played here by a settlement that fails) left a memory kept by a call that read
 * `failed / interrupted`, "stopped before it finished", and was audited so.
 */
describe('an approved call: its write and its outcome commit together (e2e)', () => {
  let t: TestApp;
  let ds: DataSource;
  let org: TestOrg;
  let agentId: string;

  const as = (role: keyof TestOrg['keys']) => bearer(org.keys[role]);
  const call = (tool: string, args: object) =>
    t.http
      .post(`/api/v1/agents/${agentId}/tool-calls`)
      .set(...as('agent'))
      .send({ tool, arguments: args });
  const approve = (approvalId: string) =>
    t.http
      .post(`/api/v1/approvals/${approvalId}/approve`)
      .set(...as('approver'))
      .send({});
  const memories = async (content: string): Promise<number> =>
    (await ds.query(`SELECT count(*)::int AS n FROM agent_memory WHERE org_id = $1 AND content = $2`, [org.id, content]))[0].n;
  const statusOf = async (callId: string): Promise<string> => (await ds.query(`SELECT status FROM tool_call WHERE id = $1`, [callId]))[0].status;
  const auditOf = async (ids: string[]): Promise<string[]> =>
    (
      await ds.query(`SELECT type || coalesce(':' || (data->'error'->>'code'), '') AS t FROM audit_event WHERE target_id = ANY($1::text[]) ORDER BY seq`, [ids])
    ).map((r: { t: string }) => r.t);

  /** The settlement of this call fails, as if the process had died the moment the tool returned. */
  async function failSettlementOf(callId: string): Promise<void> {
    await ds.query(`CREATE OR REPLACE FUNCTION fx_lose_settlement() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF NEW.id = '${callId}' AND OLD.status = 'running' AND NEW.status <> 'running' THEN RAISE EXCEPTION 'settlement lost'; END IF;
        RETURN NEW;
      END $$`);
    await ds.query(`CREATE TRIGGER fx_lose_settlement BEFORE UPDATE ON tool_call FOR EACH ROW EXECUTE FUNCTION fx_lose_settlement()`);
  }
  async function restoreSettlement(): Promise<void> {
    await ds.query(`DROP TRIGGER IF EXISTS fx_lose_settlement ON tool_call`);
  }

  /** What the sweeper does once the dead process's lease has run out. */
  async function leaseRunsOut(callId: string): Promise<void> {
    await ds.query(`UPDATE tool_call SET lease_expires_at = now() - interval '1 second' WHERE id = $1`, [callId]);
    await t.app.get(ToolCallSweeper).sweepOnce();
  }

  beforeAll(async () => {
    t = await createTestApp();
    ds = t.app.get(DataSource);
    // Sweeps happen when a test asks for one.
    await t.app.get(ToolCallSweeper).stop();
    org = await createOrg(t, ['memory:read', 'memory:write']);
    agentId = (
      await t.http
        .post('/api/v1/agents')
        .set(...as('builder'))
        .send({ slug: 'keeper', name: 'Keeper' })
        .expect(201)
    ).body.id;
    await t.http
      .put(`/api/v1/agents/${agentId}/draft`)
      .set(...as('builder'))
      .send({ instructions: 'Remember what matters.', capabilities: [{ id: 'memory' }, { id: 'memory-write' }] })
      .expect(200);
    await t.http
      .post(`/api/v1/agents/${agentId}/publish`)
      .set(...as('builder'))
      .expect(201);
  });
  afterEach(() => restoreSettlement());
  afterAll(() => t.close());

  it('keeps an approved memory with its succeeded call and its audit event', async () => {
    const asked = (await call('remember', { content: 'Kept with its outcome' }).expect(202)).body;
    const done = (await approve(asked.approvalId).expect(200)).body.toolCall;
    expect(done).toMatchObject({ status: 'succeeded', result: { content: 'Kept with its outcome' } });
    expect(await memories('Kept with its outcome')).toBe(1);
    expect(await auditOf([asked.id, asked.approvalId])).toEqual(['tool_call.requested', 'approval.requested', 'approval.approved', 'tool_call.succeeded']);
  });

  it('keeps no memory when the settlement of remember is lost: the call reads interrupted, and says nothing was kept', async () => {
    const content = 'Zanzibar lighthouse, written then lost';
    const asked = (await call('remember', { content }).expect(202)).body;
    await failSettlementOf(asked.id);
    await approve(asked.approvalId).expect(500);
    // The dead process's view: the call still running, and nothing of its write.
    expect(await statusOf(asked.id)).toBe('running');
    expect(await memories(content)).toBe(0);

    await restoreSettlement();
    await leaseRunsOut(asked.id);
    const read = (
      await t.http
        .get(`/api/v1/tool-calls/${asked.id}`)
        .set(...as('viewer'))
        .expect(200)
    ).body;
    expect(read).toMatchObject({ status: 'failed', error: { code: 'interrupted', message: INTERRUPTED_MESSAGE } });
    expect(await memories(content)).toBe(0);
    expect((await call('recall_memories', { query: content }).expect(200)).body.result.memories).toEqual([]);
    expect(await auditOf([asked.id, asked.approvalId])).toEqual([
      'tool_call.requested',
      'approval.requested',
      'approval.approved',
      'tool_call.failed:interrupted',
    ]);
  });

  it('forgets nothing when the settlement of forget is lost', async () => {
    const kept = (await call('remember', { content: 'Quokka sightings continue' }).expect(202)).body;
    const memoryId = (await approve(kept.approvalId).expect(200)).body.toolCall.result.memoryId;
    const asked = (await call('forget', { memoryId }).expect(202)).body;
    await failSettlementOf(asked.id);
    await approve(asked.approvalId).expect(500);
    expect(await memories('Quokka sightings continue')).toBe(1);
    await restoreSettlement();
    await leaseRunsOut(asked.id);
    expect(await statusOf(asked.id)).toBe('failed');
    expect((await call('recall_memories', { query: 'Quokka sightings continue' }).expect(200)).body.result.memories).toEqual([
      expect.objectContaining({ memoryId, content: 'Quokka sightings continue' }),
    ]);
  });

  it("says an interrupted MCP server's call may have run: its effect is outside this database", async () => {
    const asked = (await call('remember', { content: 'Stands in for a vendor call' }).expect(202)).body;
    // A vendor's call, approved by a process that then died: only its capability tells them apart.
    await ds.query(`UPDATE tool_call SET capability_id = 'mcp', status = 'running', started_at = now() WHERE id = $1`, [asked.id]);
    await leaseRunsOut(asked.id);
    const [row] = await ds.query(`SELECT error_code, error_message FROM tool_call WHERE id = $1`, [asked.id]);
    expect(row).toEqual({ error_code: 'interrupted', error_message: INTERRUPTED_UPSTREAM_MESSAGE });
    expect(INTERRUPTED_UPSTREAM_MESSAGE).toContain('may have run');
  });

  describe('CallTransaction', () => {
    beforeAll(() => ds.query(`CREATE TABLE fx_effect (v text NOT NULL)`));
    const rows = async (): Promise<string[]> => (await ds.query(`SELECT v FROM fx_effect ORDER BY v`)).map((r: { v: string }) => r.v);
    const insert = (v: string) => (db: { query(sql: string, p: unknown[]): Promise<unknown> }) => db.query(`INSERT INTO fx_effect (v) VALUES ($1)`, [v]);
    afterEach(() => ds.query(`DELETE FROM fx_effect`));

    it('commits the writes with a settlement that answers a row; rolls them back for a failed call or a call already settled', async () => {
      const kept = new CallTransaction(ds);
      await kept.run(insert('kept'));
      expect(await kept.settle(true, async (db) => (await db.query(`SELECT 'settled' AS s`))[0])).toEqual({ s: 'settled' });

      const failed = new CallTransaction(ds);
      await failed.run(insert('of a failed call'));
      let settledAlone = false;
      await failed.settle(false, async (db) => ((settledAlone = db === ds), { s: 'failed' }));
      expect(settledAlone).toBe(true);

      const swept = new CallTransaction(ds);
      await swept.run(insert('of a call the sweeper settled'));
      expect(await swept.settle(true, async () => undefined)).toBeUndefined();
      expect(await rows()).toEqual(['kept']);
    });

    it('rolls back the call’s writes when one throws, when it is abandoned, and when the settlement throws; refuses a write once settled', async () => {
      const broken = new CallTransaction(ds);
      await broken.run(insert('before the failing write'));
      await expect(broken.run((db) => db.query(`INSERT INTO fx_effect (v) VALUES (NULL)`))).rejects.toThrow();
      await broken.run(insert('after it'));
      await broken.settle(true, async () => ({}));

      const abandoned = new CallTransaction(ds);
      await abandoned.run(insert('abandoned'));
      await abandoned.abandon();
      await expect(abandoned.run(insert('late'))).rejects.toThrow('after its call was settled');

      const lost = new CallTransaction(ds);
      await lost.run(insert('settlement lost'));
      await expect(lost.settle(true, (db) => db.query(`SELECT 1/0`))).rejects.toThrow();
      expect(await rows()).toEqual(['after it']);
    });
  });
});
