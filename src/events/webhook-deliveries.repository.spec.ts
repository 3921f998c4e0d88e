import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { createTestDatabase, TestDatabase } from '../../test/support/test-database';
import { dataSourceOptions } from '../database/data-source-options';
import { ClaimedDelivery, WebhookDeliveriesRepository } from './webhook-deliveries.repository';

/**
 * The dispatcher's claim on a real database: organizations in turn (the lowest rank first, a rank
 * counting the attempts the organization has in flight on the node), none past its cap, one
 * delivery per endpoint, and each attempt claimed once.
 */
describe('WebhookDeliveriesRepository.claim', () => {
  let db: TestDatabase;
  let ds: DataSource;
  let repo: WebhookDeliveriesRepository;
  let minute = 0;

  beforeAll(async () => {
    db = await createTestDatabase();
    ds = new DataSource({ ...dataSourceOptions(db.url, db.poolSize), entities: [] });
    await ds.initialize();
    repo = new WebhookDeliveriesRepository(ds);
  }, 120_000);
  afterAll(async () => {
    await ds.destroy();
    await db.drop();
  });
  beforeEach(() => ds.query(`UPDATE webhook_delivery SET status = 'failed' WHERE status = 'pending'`));

  async function org(): Promise<string> {
    const id = randomUUID();
    await ds.query(`INSERT INTO org (id, slug, name) VALUES ($1, $2, 'Hooks')`, [id, `hooks-${id.slice(0, 8)}`]);
    return id;
  }

  async function endpoint(orgId: string): Promise<string> {
    const id = randomUUID();
    await ds.query(`INSERT INTO webhook_endpoint (id, org_id, url, types, secret_sealed) VALUES ($1, $2, 'https://hooks.example.com/', '{*}', 'sealed')`, [
      id,
      orgId,
    ]);
    return id;
  }

  /**
   * `n` events of the organization, each due a minute after the one before (all in the past): one
   * delivery of each to every endpoint of the organization (the outbox trigger writes them).
   * Answers the endpoint's deliveries, oldest first.
   */
  async function events(orgId: string, endpointId: string, n: number): Promise<string[]> {
    minute += n;
    await ds.query(
      `INSERT INTO audit_event (id, org_id, at, type, actor_type, actor_id, target_type, target_id)
       SELECT gen_random_uuid(), $1, now() - interval '1 day' + ($3::integer - $2::integer + g) * interval '1 minute', 'agent.created', 'api_key', 'k', 'agent', 'a'
         FROM generate_series(1, $2::integer) g`,
      [orgId, n, minute],
    );
    const deliveries: { id: string }[] = await ds.query(
      `SELECT id FROM webhook_delivery WHERE endpoint_id = $1 AND status = 'pending' ORDER BY next_attempt_at, id`,
      [endpointId],
    );
    return deliveries.map((d) => d.id);
  }

  const take = (limit: number, taken: Record<string, number> = {}, options: { max?: number; busy?: string[] } = {}): Promise<ClaimedDelivery[]> =>
    repo.claim(limit, options.busy ?? [], 30_000, { taken: new Map(Object.entries(taken)), max: options.max ?? 4 });
  /** The deliveries one claim took, in no particular order (the dispatcher starts them all). */
  const claim = async (...args: Parameters<typeof take>): Promise<string[]> => (await take(...args)).map((d) => d.id).sort();

  it("takes each organization's next delivery before a second of any, whatever the backlog ahead of it", async () => {
    const [busy, other, late] = [await org(), await org(), await org()];
    const busyEndpoints = [await endpoint(busy), await endpoint(busy), await endpoint(busy)];
    const otherEndpoint = await endpoint(other);
    await events(busy, busyEndpoints[0], 50);
    const [otherFirst] = await events(other, otherEndpoint, 1);
    const [lateFirst] = await events(late, await endpoint(late), 1);
    const claimed = await take(3);
    expect(claimed.map((d) => d.orgId).sort()).toEqual([busy, other, late].sort());
    expect(claimed.filter((d) => d.orgId !== busy).map((d) => d.id)).toEqual(expect.arrayContaining([otherFirst, lateFirst]));
  });

  it('counts the attempts an organization has in flight on the node, and takes none of one at its cap', async () => {
    const [busy, full, fresh] = [await org(), await org(), await org()];
    const busyEndpoint = await endpoint(busy);
    const fullEndpoint = await endpoint(full);
    const freshEndpoint = await endpoint(fresh);
    const busyFirst = await events(busy, busyEndpoint, 5);
    await events(full, fullEndpoint, 5);
    const [freshFirst] = await events(fresh, freshEndpoint, 1);
    const taken = { [busy]: 3, [full]: 4 };
    expect(await claim(1, taken)).toEqual([freshFirst]);
    expect(await claim(16, { ...taken, [fresh]: 1 })).toEqual([busyFirst[0]]);
  });

  it('a backlog past a thousand deliveries does not hide a newer organization', async () => {
    const [busy, fresh] = [await org(), await org()];
    const busyEndpoint = await endpoint(busy);
    const freshEndpoint = await endpoint(fresh);
    await events(busy, busyEndpoint, 1200);
    const [freshFirst] = await events(fresh, freshEndpoint, 1);
    expect(await claim(1, { [busy]: 1 })).toEqual([freshFirst]);
  });

  it('takes one delivery per endpoint per claim, none of a busy endpoint, and no more of an organization than its cap', async () => {
    const o = await org();
    const [a, b, c] = [await endpoint(o), await endpoint(o), await endpoint(o)];
    const [aFirst] = await events(o, a, 3);
    const bRows = await ds.query(`SELECT id FROM webhook_delivery WHERE endpoint_id = $1 AND status = 'pending' ORDER BY next_attempt_at, id`, [b]);
    const cRows = await ds.query(`SELECT id FROM webhook_delivery WHERE endpoint_id = $1 AND status = 'pending' ORDER BY next_attempt_at, id`, [c]);
    expect(await claim(16, {}, { busy: [c], max: 2 })).toEqual([aFirst, bRows[0].id].sort());
    // Claimed attempts are leased (due again only after the lease): the next claim takes the next ones.
    expect(await claim(16, {}, { max: 4 })).toHaveLength(3);
    expect(cRows).toHaveLength(3);
  });

  it('claims each attempt once when nodes claim at the same time', async () => {
    const orgs = await Promise.all(Array.from({ length: 4 }, () => org()));
    const endpoints = await Promise.all(orgs.flatMap((o) => [endpoint(o), endpoint(o)]));
    for (let i = 0; i < orgs.length; i++) await events(orgs[i], endpoints[2 * i], 3);
    const rounds = await Promise.all(Array.from({ length: 5 }, () => claim(8)));
    const ids = rounds.flat();
    expect(new Set(ids).size).toBe(ids.length);
    const attempts: { n: string }[] = await ds.query(`SELECT count(*)::text AS n FROM webhook_attempt WHERE delivery_id = ANY ($1::uuid[])`, [ids]);
    expect(Number(attempts[0].n)).toBe(ids.length);
  });
});
