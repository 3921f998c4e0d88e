import { DataSource } from 'typeorm';
import { AuditRepository } from '../src/audit/audit.repository';
import { AUDIT_RETENTION_BATCH, AuditRetentionSweeper } from '../src/audit/audit-retention.service';
import { APP_CONFIG, AppConfig } from '../src/config/app-config';
import { bearer, createOrg, createTestApp, TestApp, TestOrg } from './support/test-app';

const DAY = 86_400_000;

/**
 * AUDIT_RETENTION_DAYS (attack round 19, Z-N1: the audit log was written at each key's rate limit
 * and never trimmed): events older are removed by each node's sweep, of every organization, and the
 * table itself refuses any change and any removal of an event younger than the retention the
 * removing transaction names. Days cannot be waited for: events are written old in the database.
 * On either database.
 */
describe('audit log retention (e2e)', () => {
  let t: TestApp;
  let ds: DataSource;
  let a: TestOrg;
  let b: TestOrg;

  beforeAll(async () => {
    // The interval's sweeps would race the test's own: an hour apart, the test sweeps when it means to.
    t = await createTestApp({ config: { sweepIntervalMs: 3_600_000, auditRetentionMs: 7 * DAY } });
    ds = t.app.get(DataSource);
    [a, b] = [await createOrg(t), await createOrg(t)];
  }, 180_000);
  afterAll(() => t.close());

  let written = 0;
  /**
   * `count` events of the organization (null: the platform's) written `days` ago, numbered as if
   * written then: the older an event, the lower its sequence (the sweep takes the oldest by it).
   */
  const writeOld = (orgId: string | null, days: number, count: number, type = 'agent.created') => {
    const first = -days * 1_000_000 + written;
    written += count;
    return ds.query(
      `INSERT INTO audit_event (seq, id, org_id, at, type, actor_type, actor_id, target_type, target_id, data) OVERRIDING SYSTEM VALUE
       SELECT $5::bigint + i, gen_random_uuid(), $1, now() - make_interval(days => $2), $3, 'api_key', 'k', 'agent', 'a' || i, '{}' FROM generate_series(1, $4) AS i`,
      [orgId, days, type, count, first],
    );
  };
  const olderThan = async (days: number): Promise<number> =>
    (await ds.query(`SELECT count(*)::int AS n FROM audit_event WHERE at < now() - make_interval(days => $1)`, [days]))[0].n;
  const sweeper = () => t.app.get(AuditRetentionSweeper);

  it("removes every organization's events older than the retention, and the platform's, and keeps the rest", async () => {
    await writeOld(a.id, 10, 3);
    await writeOld(b.id, 30, 2);
    await writeOld(null, 400, 1);
    await writeOld(a.id, 6, 1, 'agent.updated');
    await t.http
      .post('/api/v1/agents')
      .set(...bearer(a.keys.builder))
      .send({ name: 'Kept', slug: 'kept' })
      .expect(201);
    expect(await olderThan(7)).toBe(6);

    expect(await sweeper().sweepOnce()).toBe(6);
    expect(await olderThan(7)).toBe(0);
    const listed = await t.http
      .get('/api/v1/audit-events?limit=200')
      .set(...bearer(a.keys.admin))
      .expect(200);
    const types = listed.body.items.map((e: { type: string }) => e.type);
    expect(types).toContain('agent.updated');
    expect(listed.body.items).toContainEqual(
      expect.objectContaining({ type: 'agent.created', target: { type: 'agent', id: expect.not.stringMatching(/^a\d+$/) } }),
    );
    expect(listed.body.items.every((e: { at: string }) => Date.parse(e.at) > Date.now() - 7 * DAY)).toBe(true);
    expect(await sweeper().sweepOnce()).toBe(0);
  });

  it('removes a backlog a batch at a time, to the last event', async () => {
    const counts: number[] = [];
    const repo = t.app.get(AuditRepository);
    const deleteOlderThan = repo.deleteOlderThan.bind(repo);
    const spy = jest.spyOn(repo, 'deleteOlderThan').mockImplementation(async (...args) => {
      const n = await deleteOlderThan(...args);
      counts.push(n);
      return n;
    });
    try {
      await writeOld(b.id, 8, 2 * AUDIT_RETENTION_BATCH + 500);
      expect(await sweeper().sweepOnce()).toBe(2 * AUDIT_RETENTION_BATCH + 500);
      expect(counts).toEqual([AUDIT_RETENTION_BATCH, AUDIT_RETENTION_BATCH, 500]);
      expect(await olderThan(7)).toBe(0);
    } finally {
      spy.mockRestore();
    }
  });

  it('removes nothing when off (the default): the log is kept for good', async () => {
    await writeOld(a.id, 3650, 1);
    const config = t.app.get<AppConfig>(APP_CONFIG);
    const off = new AuditRetentionSweeper(t.app.get(AuditRepository), { ...config, auditRetentionMs: 0 });
    expect(await off.sweepOnce()).toBe(0);
    expect(await olderThan(3000)).toBe(1);
    await sweeper().sweepOnce();
  });

  it('the table refuses to change an event, or to remove one younger than the retention its transaction names, whatever the code', async () => {
    await writeOld(a.id, 6, 1, 'agent.deleted');
    await writeOld(a.id, 9, 1, 'agent.deleted');
    const [young] = await ds.query(`SELECT id FROM audit_event WHERE type = 'agent.deleted' AND at > now() - interval '7 days'`);
    const [old] = await ds.query(`SELECT id FROM audit_event WHERE type = 'agent.deleted' AND at < now() - interval '7 days'`);
    const inRetention = (days: string, sql: string, id: string) =>
      ds.transaction(async (m) => {
        await m.query(`SELECT set_config('audit.retention_days', $1, true)`, [days]);
        return m.query(sql, [id]);
      });
    await expect(ds.query(`UPDATE audit_event SET type = 'agent.created' WHERE id = $1`, [young.id])).rejects.toThrow(/append-only/);
    await expect(inRetention('7', `UPDATE audit_event SET data = '{}' WHERE id = $1`, old.id)).rejects.toThrow(/append-only/);
    await expect(ds.query(`DELETE FROM audit_event WHERE id = $1`, [old.id])).rejects.toThrow(/append-only/);
    await expect(inRetention('0', `DELETE FROM audit_event WHERE id = $1`, old.id)).rejects.toThrow(/append-only/);
    await expect(inRetention('7', `DELETE FROM audit_event WHERE id = $1`, young.id)).rejects.toThrow(/append-only/);
    // The setting lasts its transaction only: the next statement on the connection is refused again.
    await inRetention('7', `DELETE FROM audit_event WHERE id = $1`, old.id);
    await expect(ds.query(`DELETE FROM audit_event WHERE id = $1`, [young.id])).rejects.toThrow(/append-only/);
    expect((await ds.query(`SELECT id FROM audit_event WHERE type = 'agent.deleted'`)).map((r: { id: string }) => r.id)).toEqual([young.id]);
  });
});
