import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { createTestDatabase, TestDatabase } from '../../test/support/test-database';
import type { AuditService } from '../audit/audit.service';
import { dataSourceOptions } from '../database/data-source-options';
import type { Metrics } from '../telemetry/metrics';
import { ClaimedRun, RunsRepository } from './runs.repository';

/**
 * The claim of runs that need a node, on a real database: organizations are served in turn (the
 * lowest rank first, a rank counting the runs the organization already steps on the node), none
 * past its cap, and a run is claimed by one node only.
 */
describe('RunsRepository.claim', () => {
  let db: TestDatabase;
  let ds: DataSource;
  let repo: RunsRepository;
  let minute = 0;

  beforeAll(async () => {
    db = await createTestDatabase();
    ds = new DataSource({ ...dataSourceOptions(db.url, db.poolSize), entities: [] });
    await ds.initialize();
    repo = new RunsRepository(ds, {} as AuditService, {} as Metrics);
  }, 120_000);
  afterAll(async () => {
    await ds.destroy();
    await db.drop();
  });
  beforeEach(() =>
    ds.query(`UPDATE run SET status = 'cancelled', lease_owner = NULL, lease_expires_at = NULL WHERE status IN ('running', 'waiting_for_approval')`),
  );

  async function org(): Promise<{ id: string; agent: string }> {
    const id = randomUUID();
    const agent = randomUUID();
    await ds.query(`INSERT INTO org (id, slug, name) VALUES ($1, $2, 'Claims')`, [id, `claims-${id.slice(0, 8)}`]);
    await ds.query(`INSERT INTO agent (id, org_id, slug, name, draft) VALUES ($1, $2, 'a', 'A', '{}')`, [agent, id]);
    return { id, agent };
  }

  /** `n` runs waiting for a node, each queued a minute after the one before (all in the past). */
  async function queue(o: { id: string; agent: string }, n: number): Promise<string[]> {
    const ids: string[] = [];
    for (let i = 0; i < n; i++) {
      const id = randomUUID();
      await ds.query(
        `INSERT INTO run (id, org_id, agent_id, version, status, input, messages, requested_by, created_at, updated_at)
         VALUES ($1, $2, $3, 1, 'running', 'x', '[]', $4, now() - interval '1 day' + $5 * interval '1 minute', now() - interval '1 day' + $5 * interval '1 minute')`,
        [id, o.id, o.agent, randomUUID(), ++minute],
      );
      ids.push(id);
    }
    return ids;
  }

  /** What one claim took, in no particular order (the worker starts them all). */
  const claim = async (limit: number, taken: Record<string, number> = {}, max = 4, owner = 'node-a'): Promise<ClaimedRun[]> =>
    byId(await repo.claim(owner, 30_000, limit, { taken: new Map(Object.entries(taken)), max }));
  const byId = (runs: ClaimedRun[]) => [...runs].sort((a, b) => a.id.localeCompare(b.id));

  it('takes one run of each organization before a second of any: a queue of hundreds does not hold a newer one back', async () => {
    const [busy, other, late] = [await org(), await org(), await org()];
    const queued = await queue(busy, 200);
    const [otherRun] = await queue(other, 1);
    const [lateRun] = await queue(late, 1);
    expect(await claim(3)).toEqual(
      byId([
        { id: queued[0], orgId: busy.id },
        { id: otherRun, orgId: other.id },
        { id: lateRun, orgId: late.id },
      ]),
    );
  });

  it('counts the runs an organization already steps on the node, and skips one at its cap', async () => {
    const [busy, full, fresh] = [await org(), await org(), await org()];
    const busyRuns = await queue(busy, 5);
    await queue(full, 5);
    const [freshRun] = await queue(fresh, 1);
    // `busy` steps 3 of its 4 here: its 4th comes after the fresh organization's first; `full` has no slot left.
    const taken = { [busy.id]: 3, [full.id]: 4 };
    expect(await claim(1, taken)).toEqual([{ id: freshRun, orgId: fresh.id }]);
    expect(await claim(10, { ...taken, [fresh.id]: 1 })).toEqual([{ id: busyRuns[0], orgId: busy.id }]);
  });

  it('never gives one organization more than its cap, however many slots are free', async () => {
    const [a, b] = [await org(), await org()];
    const aRuns = await queue(a, 6);
    const bRuns = await queue(b, 1);
    const claimed = await claim(16, {}, 2);
    expect(claimed).toEqual(byId([...aRuns.slice(0, 2).map((id) => ({ id, orgId: a.id })), { id: bRuns[0], orgId: b.id }]));
    // The lease is the claim: taken runs are not claimable again until it runs out or is given back.
    expect(await claim(16, {}, 4, 'node-b')).toEqual(byId(aRuns.slice(2, 6).map((id) => ({ id, orgId: a.id }))));
  });

  it('keeps the reserve for organizations stepping nothing here: past `shared`, only one first run each', async () => {
    const [busy, fresh, newer] = [await org(), await org(), await org()];
    const busyRuns = await queue(busy, 5);
    const [freshRun] = await queue(fresh, 3);
    const [newerRun] = await queue(newer, 1);
    const reserve = (limit: number, taken: Record<string, number>, shared: number) =>
      repo.claim('node-a', 30_000, limit, { taken: new Map(Object.entries(taken)), max: 4, shared }).then(byId);
    // 4 slots, 1 kept, `busy` steps 1: two more may be of organizations stepping some, the newcomers' first runs among them.
    expect(await reserve(3, { [busy.id]: 1 }, 2)).toEqual(
      byId([
        { id: freshRun, orgId: fresh.id },
        { id: newerRun, orgId: newer.id },
      ]),
    );
    // Nothing shared left: not even `fresh`, now stepping one here, starts a second.
    expect(await reserve(1, { [busy.id]: 1, [fresh.id]: 1, [newer.id]: 1 }, 0)).toEqual([]);
    // One shared slot left of three free: one run, of the lowest rank and oldest (`fresh` has two more queued).
    expect(await reserve(3, { [busy.id]: 1, [fresh.id]: 1, [newer.id]: 1 }, 1)).toEqual([{ id: busyRuns[0], orgId: busy.id }]);
  });

  it('leaves runs another node holds, runs waiting for a retry, and waiting runs whose approvals are undecided', async () => {
    const o = await org();
    const [held, later, waiting, ready] = await queue(o, 4);
    await ds.query(`UPDATE run SET lease_owner = 'node-x', lease_expires_at = now() + interval '1 minute' WHERE id = $1`, [held]);
    await ds.query(`UPDATE run SET not_before = now() + interval '1 minute' WHERE id = $1`, [later]);
    const call = randomUUID();
    await ds.query(
      `INSERT INTO agent_version (org_id, agent_id, version, spec, spec_hash, tool_digests, content_hash, published_by) VALUES ($1, $2, 1, '{}', 'h', '{}', 'c', 'test')`,
      [o.id, o.agent],
    );
    await ds.query(
      `INSERT INTO tool_call (id, org_id, agent_id, version, tool, capability_id, tool_id, entry_point, arguments, arguments_hash, status, requested_by, approval_expires_at)
       VALUES ($1, $2, $3, 1, 't', 'c', 't', 'run', '{}', 'h', 'pending_approval', $4, now() + interval '1 hour')`,
      [call, o.id, o.agent, randomUUID()],
    );
    await ds.query(`UPDATE run SET status = 'waiting_for_approval', pending_tool_call_ids = $2 WHERE id = $1`, [waiting, [call]]);
    expect(await claim(16)).toEqual([{ id: ready, orgId: o.id }]);
  });

  it('claims each run once when nodes claim at the same time', async () => {
    const orgs = await Promise.all(Array.from({ length: 4 }, () => org()));
    const all = (await Promise.all(orgs.map((o) => queue(o, 5)))).flat();
    const rounds = await Promise.all(['n1', 'n2', 'n3', 'n4', 'n5'].map((owner) => claim(4, {}, 5, owner)));
    const ids = rounds.flat().map((r) => r.id);
    expect(new Set(ids).size).toBe(ids.length);
    const again = await claim(100, {}, 5, 'n6');
    expect([...ids, ...again.map((r) => r.id)].sort()).toEqual([...all].sort());
  });
});
