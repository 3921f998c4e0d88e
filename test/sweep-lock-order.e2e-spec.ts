import { randomUUID } from 'node:crypto';
import { DataSource, QueryRunner } from 'typeorm';
import { ToolCallMaintenanceRepository } from '../src/tool-calls/tool-call-maintenance.repository';
import { createOrg, createTestApp, TestApp, TestOrg } from './support/test-app';

/**
 * Settling a run's call wakes the run (a trigger on tool_call updates its row), and one sweep
 * settles up to 500 calls in one statement, in no order the statement promises. Two nodes sweeping
 * two calls each of the same two runs (a step's parallel calls) could each hold one run and wait
 * for the other's: PostgreSQL then aborts one sweep. Every sweep now takes the runs' locks in id
 * order before it settles a call, so a sweep waiting for one run holds no run after it.
 *
 * Only on a real server (DATABASE_URL): the embedded database serves one connection at a time, so
 * a lock held by one connection cannot be watched from another there.
 */
const onRealServer = Boolean(process.env.DATABASE_URL);
if (!onRealServer) console.info('sweep lock order: runs when DATABASE_URL is set (the embedded database serves one connection at a time)');
(onRealServer ? describe : describe.skip)('the sweeps lock the runs they wake in id order (e2e)', () => {
  let t: TestApp;
  let db: DataSource;
  let org: TestOrg;
  let agentId: string;
  let holder: QueryRunner | undefined;

  beforeAll(async () => {
    // The node's own sweeper stays out of the way: the test runs each sweep itself.
    t = await createTestApp({ config: { sweepIntervalMs: 3_600_000 } });
    db = t.app.get(DataSource);
    org = await createOrg(t, []);
    agentId = randomUUID();
    await db.query(`INSERT INTO agent (id, org_id, slug, name, draft) VALUES ($1, $2, 'sweeps', 'Sweeps', '{}')`, [agentId, org.id]);
    await db.query(
      `INSERT INTO agent_version (org_id, agent_id, version, spec, spec_hash, tool_digests, content_hash, published_by) VALUES ($1, $2, 1, '{}', 'h', '{}', 'c', $3)`,
      [org.id, agentId, randomUUID()],
    );
  }, 120_000);
  afterEach(async () => {
    if (holder?.isTransactionActive) await holder.rollbackTransaction();
    await holder?.release();
    holder = undefined;
  });
  afterAll(async () => {
    await t.close();
  });

  /**
   * Two runs, lower id first, each waiting on its calls. Each is leased to another node for the
   * hour: a run with no lease is claimed by this node's engine, whose claim and step lock the run's
   * row too (CI once saw the higher run locked by it, not by the sweep).
   */
  async function twoRuns(): Promise<[string, string]> {
    const [low, high] = [randomUUID(), randomUUID()].sort();
    for (const id of [low, high]) {
      await db.query(
        `INSERT INTO run (id, org_id, agent_id, version, status, input, messages, requested_by, lease_owner, lease_expires_at)
         VALUES ($1, $2, $3, 1, 'running', 'x', '[]', $4, 'another-node', now() + interval '1 hour')`,
        [id, org.id, agentId, randomUUID()],
      );
    }
    return [low, high];
  }

  /** A call of `run` in `status`; `at` orders the sweep's batch (lease or approval expiry, in the past). */
  async function callOf(run: string, status: 'running' | 'pending_approval', secondsAgo: number): Promise<string> {
    const id = randomUUID();
    const approvalId = status === 'pending_approval' ? randomUUID() : null;
    await db.query(
      `INSERT INTO tool_call (id, org_id, agent_id, version, tool, capability_id, tool_id, run_id, entry_point, arguments, arguments_hash,
                              status, requested_by, approval_id, approval_expires_at, lease_expires_at, started_at)
       VALUES ($1, $2, $3, 1, 't', 'c', 't', $4, 'run', '{}', 'h', $5, $6, $7,
               CASE WHEN $7::uuid IS NULL THEN NULL ELSE now() - make_interval(secs => $8) END,
               CASE WHEN $7::uuid IS NULL THEN now() - make_interval(secs => $8) ELSE NULL END,
               CASE WHEN $7::uuid IS NULL THEN now() - interval '1 minute' ELSE NULL END)`,
      [id, org.id, agentId, run, status, randomUUID(), approvalId, secondsAgo],
    );
    if (approvalId) {
      await db.query(
        `INSERT INTO approval (id, org_id, tool_call_id, agent_id, version, tool, capability_id, tool_id, arguments_hash, reason, status, requested_by, expires_at)
         VALUES ($1, $2, $3, $4, 1, 't', 'c', 't', 'h', 'side_effecting', 'pending', $5, now() - make_interval(secs => $6))`,
        [approvalId, org.id, id, agentId, randomUUID(), secondsAgo],
      );
    }
    return id;
  }

  /** Holds `run`'s row lock in a transaction of its own until the test ends. */
  async function hold(run: string): Promise<void> {
    holder = db.createQueryRunner();
    await holder.connect();
    await holder.startTransaction();
    await holder.query(`SELECT id FROM run WHERE id = $1 FOR UPDATE`, [run]);
  }

  /** Whether another transaction holds `run`'s row lock now. */
  async function locked(run: string): Promise<boolean> {
    try {
      await db.query(`SELECT id FROM run WHERE id = $1 FOR UPDATE NOWAIT`, [run]);
      return false;
    } catch (err) {
      if ((err as { code?: string }).code === '55P03') return true;
      throw err;
    }
  }

  /** Waits until the sweep is blocked on a row lock. */
  async function blocked(): Promise<void> {
    for (let i = 0; i < 200; i++) {
      const rows: unknown[] = await db.query(`SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`);
      if (rows.length > 0) return;
      await new Promise((r) => setTimeout(r, 25));
    }
    throw new Error('the sweep never waited for the held run');
  }

  const wakes = async (run: string) => ((await db.query(`SELECT wakes FROM run WHERE id = $1`, [run])) as { wakes: number }[])[0].wakes;

  it('the interruption sweep, waiting for one run, holds no run after it', async () => {
    const [low, high] = await twoRuns();
    // The higher run's call first in the batch: settled in that order, the sweep would lock it first.
    const first = await callOf(high, 'running', 20);
    const second = await callOf(low, 'running', 10);
    await hold(low);
    const sweep = t.app.get(ToolCallMaintenanceRepository).interruptAbandoned();
    await blocked();
    expect(await locked(high)).toBe(false);
    await holder!.commitTransaction();
    const interrupted = await sweep;
    expect(interrupted.map((c) => c.callId).sort()).toEqual([first, second].sort());
    expect([await wakes(low), await wakes(high)]).toEqual([1, 1]);
  });

  it('the expiry sweep, waiting for one run, holds no run after it', async () => {
    const [low, high] = await twoRuns();
    const first = await callOf(high, 'pending_approval', 20);
    const second = await callOf(low, 'pending_approval', 10);
    await hold(low);
    const sweep = t.app.get(ToolCallMaintenanceRepository).expireApprovals();
    await blocked();
    expect(await locked(high)).toBe(false);
    await holder!.commitTransaction();
    const expired = await sweep;
    expect(expired.map((c) => c.callId).sort()).toEqual([first, second].sort());
    const statuses = (await db.query(`SELECT status FROM tool_call WHERE id = ANY($1::uuid[])`, [[first, second]])) as { status: string }[];
    expect(statuses.map((s) => s.status)).toEqual(['expired', 'expired']);
    expect([await wakes(low), await wakes(high)]).toEqual([1, 1]);
  });
});
