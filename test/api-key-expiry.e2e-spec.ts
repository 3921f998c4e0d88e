import http from 'node:http';
import { DataSource } from 'typeorm';
import { bearer, createOrg, createTestApp, TestApp, TestOrg } from './support/test-app';
import { until } from './support/until';

/**
 * A key may be given an expiry when it is made (`expiresAt`): from then on it is refused as a
 * revoked key is, everywhere a key is checked, what it opened ends, and it no longer counts
 * against the organization's keys. Without one a key lives until it is revoked, as before.
 */
describe('API keys that expire (e2e)', () => {
  let t: TestApp;
  let org: TestOrg;
  let ds: DataSource;
  let port: number;
  const closers: (() => void)[] = [];
  beforeAll(async () => {
    t = await createTestApp();
    await t.app.listen(0, '127.0.0.1');
    port = (t.app.getHttpServer().address() as { port: number }).port;
    ds = t.app.get(DataSource);
    org = await createOrg(t);
  });
  afterEach(() => closers.splice(0).forEach((close) => close()));
  afterAll(() => t.close());

  const create = (body: object) =>
    t.http
      .post(`/api/v1/orgs/${org.id}/api-keys`)
      .set(...bearer(org.keys.admin))
      .send({ name: 'expiring', roles: ['viewer'], ...body });
  const liveKeys = async () =>
    (
      (
        await t.http
          .get(`/api/v1/orgs/${org.id}/usage`)
          .set(...bearer(org.keys.admin))
          .expect(200)
      ).body.items as { meter: string; used: number }[]
    ).find((i) => i.meter === 'api_keys')!.used;

  it('answers its expiry, accepts it until then and refuses it after, everywhere a key is checked', async () => {
    const at = new Date(Date.now() + 3_600_000);
    at.setUTCMilliseconds(0);
    const before = await liveKeys();
    const made = await create({ expiresAt: at.toISOString().replace('.000Z', 'Z') }).expect(201);
    expect(made.body.expiresAt).toBe(at.toISOString());
    const listed = (
      await t.http
        .get(`/api/v1/orgs/${org.id}/api-keys?limit=200`)
        .set(...bearer(org.keys.admin))
        .expect(200)
    ).body.items as {
      id: string;
      expiresAt: string | null;
    }[];
    expect(listed.find((k) => k.id === made.body.id)?.expiresAt).toBe(at.toISOString());
    expect(listed.find((k) => k.id === org.keyIds.admin)?.expiresAt).toBeNull();
    const events = (
      await t.http
        .get('/api/v1/audit-events?type=api_key.created&limit=1')
        .set(...bearer(org.keys.admin))
        .expect(200)
    ).body.items;
    expect(events[0].data).toEqual({ name: 'expiring', roles: ['viewer'], expiresAt: at.toISOString() });
    await t.http
      .get('/api/v1/agents')
      .set(...bearer(made.body.token))
      .expect(200);
    expect(await liveKeys()).toBe(before + 1);
    // The key's holder reads when to replace it; a key without an expiry says none.
    const me = await t.http
      .get('/api/v1/me')
      .set(...bearer(made.body.token))
      .expect(200);
    expect(me.body).toEqual({ type: 'api_key', id: made.body.id, orgId: org.id, roles: ['viewer'], expiresAt: at.toISOString() });
    expect(
      (
        await t.http
          .get('/api/v1/me')
          .set(...bearer(org.keys.viewer))
          .expect(200)
      ).body,
    ).not.toHaveProperty('expiresAt');

    // Past its expiry: refused as a revoked key is, and no longer counted.
    await ds.query(`UPDATE api_key SET expires_at = now() - interval '1 second' WHERE id = $1`, [made.body.id]);
    const refused = await t.http
      .get('/api/v1/agents')
      .set(...bearer(made.body.token))
      .expect(401);
    expect(refused.body.code).toBe('unauthorized');
    expect(await liveKeys()).toBe(before);
    // It may still be revoked, for the record.
    await t.http
      .delete(`/api/v1/orgs/${org.id}/api-keys/${made.body.id}`)
      .set(...bearer(org.keys.admin))
      .expect(204);
  });

  it('ends an event stream the key opened when it expires', async () => {
    const open = async () => {
      const made = await create({ roles: ['approver'], expiresAt: new Date(Date.now() + 3_000).toISOString() }).expect(201);
      const res = await new Promise<http.IncomingMessage>((resolve, reject) => {
        const req = http.get({ host: '127.0.0.1', port, path: '/api/v1/events', headers: { authorization: `Bearer ${made.body.token}` } }, resolve);
        req.on('error', reject);
        closers.push(() => req.destroy());
      });
      return { made, res };
    };
    // A machine slow enough to take the key's 3 s to open the stream gets 401: another key then.
    let { made, res } = await open();
    for (let tries = 1; res.statusCode === 401 && tries < 3; tries++) ({ made, res } = await open());
    expect(res.statusCode).toBe(200);
    let ended = false;
    res.on('data', () => undefined);
    res.on('end', () => (ended = true));
    // Well before the next heartbeat's check (15 s): the stream ends at the key's expiry.
    await until(
      async () => ended,
      (e) => e,
      10_000,
    );
    await t.http
      .get('/api/v1/agents')
      .set(...bearer(made.body.token))
      .expect(401);
  });

  it('reads a date-time without a zone as UTC, and a date alone as its midnight UTC', async () => {
    const next = new Date(Date.now() + 86_400_000 * 2);
    const day = next.toISOString().slice(0, 10);
    expect((await create({ expiresAt: `${day}T12:30:00` }).expect(201)).body.expiresAt).toBe(`${day}T12:30:00.000Z`);
    expect((await create({ expiresAt: day }).expect(201)).body.expiresAt).toBe(`${day}T00:00:00.000Z`);
    expect((await create({ expiresAt: `${day}T12:30:00+02:00` }).expect(201)).body.expiresAt).toBe(`${day}T10:30:00.000Z`);
    expect((await create({ expiresAt: null }).expect(201)).body.expiresAt).toBeNull();
  });

  it.each([
    ['in the past', () => new Date(Date.now() - 60_000).toISOString(), 'isFutureInstant'],
    ['now', () => new Date().toISOString().slice(0, 10), 'isFutureInstant'],
    ['the year 10000', () => '+010000-01-01T00:00:00Z', 'isIso8601'],
    ['not a date', () => 'next tuesday', 'isIso8601'],
    ['a week date', () => '2099-W01', 'isFutureInstant'],
    ['a number', () => 1893456000000, 'isString'],
    ['too long', () => `2099-01-01T00:00:00${'0'.repeat(60)}Z`, 'maxLength'],
  ])('refuses an expiry %s, naming the field, and makes no key', async (_what, value, code) => {
    const before = (await ds.query(`SELECT count(*)::int AS n FROM api_key WHERE org_id = $1`, [org.id]))[0].n as number;
    const res = await create({ expiresAt: value() }).expect(400);
    expect(res.body.errors).toEqual(expect.arrayContaining([expect.objectContaining({ path: 'expiresAt', code })]));
    expect((await ds.query(`SELECT count(*)::int AS n FROM api_key WHERE org_id = $1`, [org.id]))[0].n).toBe(before);
  });

  it("holds new keys to the organization's longest lifetime, once an admin sets one, and audits the change", async () => {
    const own = await createOrg(t);
    const policy = (body: object, token = own.keys.admin) =>
      t.http
        .put(`/api/v1/orgs/${own.id}/api-key-policy`)
        .set(...bearer(token))
        .send(body);
    const make = (body: object) =>
      t.http
        .post(`/api/v1/orgs/${own.id}/api-keys`)
        .set(...bearer(own.keys.admin))
        .send({ name: 'bounded', roles: ['viewer'], ...body });
    expect(
      (
        await t.http
          .get(`/api/v1/orgs/${own.id}/api-key-policy`)
          .set(...bearer(own.keys.admin))
          .expect(200)
      ).body,
    ).toEqual({ maxLifetimeDays: null });
    expect((await make({}).expect(201)).body.expiresAt).toBeNull();

    expect((await policy({ maxLifetimeDays: 90 }).expect(200)).body).toEqual({ maxLifetimeDays: 90 });
    expect(
      (
        await t.http
          .get(`/api/v1/orgs/${own.id}/api-key-policy`)
          .set(...bearer(t.adminToken))
          .expect(200)
      ).body,
    ).toEqual({ maxLifetimeDays: 90 });
    // Without an expiry: the longest allowed, counted from when it was made.
    const before = Date.now();
    const bounded = Date.parse((await make({}).expect(201)).body.expiresAt);
    expect(bounded).toBeGreaterThanOrEqual(before + 90 * 86_400_000);
    expect(bounded).toBeLessThanOrEqual(Date.now() + 90 * 86_400_000);
    // Sooner is kept; later is refused at the field, and nothing is made.
    const soon = new Date(Date.now() + 86_400_000).toISOString();
    expect((await make({ expiresAt: soon }).expect(201)).body.expiresAt).toBe(soon);
    const keys = async () => (await ds.query(`SELECT count(*)::int AS n FROM api_key WHERE org_id = $1`, [own.id]))[0].n as number;
    const count = await keys();
    const late = await make({ expiresAt: new Date(Date.now() + 91 * 86_400_000).toISOString() }).expect(400);
    expect(late.body.errors).toEqual([expect.objectContaining({ path: 'expiresAt', code: 'beyondKeyPolicy' })]);
    expect(await keys()).toBe(count);

    const audit = (
      await t.http
        .get('/api/v1/audit-events?type=org.api_key_policy_updated')
        .set(...bearer(own.keys.admin))
        .expect(200)
    ).body.items;
    expect(audit.map((e: { data: unknown }) => e.data)).toEqual([{ maxLifetimeDays: 90, previous: null }]);
    // Lifted again: a key without an expiry lives until revoked.
    expect((await policy({ maxLifetimeDays: null }).expect(200)).body).toEqual({ maxLifetimeDays: null });
    expect((await make({}).expect(201)).body.expiresAt).toBeNull();

    for (const [body, code] of [
      [{ maxLifetimeDays: 0 }, 'min'],
      [{ maxLifetimeDays: 3651 }, 'max'],
      [{ maxLifetimeDays: 1.5 }, 'isInt'],
      [{ maxLifetimeDays: '90' }, 'isInt'],
      [{}, 'isInt'],
    ] as const) {
      const res = await policy(body).expect(400);
      expect(res.body.errors).toEqual(expect.arrayContaining([expect.objectContaining({ path: 'maxLifetimeDays', code })]));
    }
    // Another organization's admin cannot read or set it.
    await policy({ maxLifetimeDays: 1 }, org.keys.admin).expect(404);
    expect(
      (
        await t.http
          .get(`/api/v1/orgs/${own.id}/api-key-policy`)
          .set(...bearer(own.keys.admin))
          .expect(200)
      ).body,
    ).toEqual({ maxLifetimeDays: null });
  });

  // The count's lock is PostgreSQL's (an advisory lock); the embedded database takes creations one at a time anyway.
  (process.env.DATABASE_URL ? it : it.skip)('holds key creations queued while the policy is set to it: none made after it lives longer (V-F3)', async () => {
    const own = await createOrg(t);
    const holder = ds.createQueryRunner();
    await holder.connect();
    await holder.startTransaction();
    try {
      await holder.query(`SELECT pg_advisory_xact_lock(hashtextextended($1 || ':' || $2::text, 0))`, ['api_key', own.id]);
      const queued = Array.from({ length: 5 }, (_, i) =>
        Promise.resolve(
          t.http
            .post(`/api/v1/orgs/${own.id}/api-keys`)
            .set(...bearer(own.keys.admin))
            .send({ name: `queued-${i}`, roles: ['admin'] }),
        ),
      );
      for (let i = 0; i < 400; i++) {
        const [{ n }]: { n: number }[] = await ds.query(
          `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`,
        );
        if (n >= queued.length) break;
        await new Promise((r) => setTimeout(r, 25));
      }
      await t.http
        .put(`/api/v1/orgs/${own.id}/api-key-policy`)
        .set(...bearer(own.keys.admin))
        .send({ maxLifetimeDays: 1 })
        .expect(200);
      await holder.commitTransaction();
      const made = await Promise.all(queued);
      expect(made.map((r) => r.status)).toEqual([201, 201, 201, 201, 201]);
      // Each made after the policy committed: held to its day (was: no expiry at all).
      for (const r of made) expect(Date.parse(r.body.expiresAt ?? 'none')).toBeLessThanOrEqual(Date.now() + 86_400_000);
    } finally {
      if (holder.isTransactionActive) await holder.rollbackTransaction();
      await holder.release();
    }
  });
});
