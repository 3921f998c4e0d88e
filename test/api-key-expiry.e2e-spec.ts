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
    const made = await create({ roles: ['approver'], expiresAt: new Date(Date.now() + 3_000).toISOString() }).expect(201);
    let ended = false;
    const res = await new Promise<http.IncomingMessage>((resolve, reject) => {
      const req = http.get({ host: '127.0.0.1', port, path: '/api/v1/events', headers: { authorization: `Bearer ${made.body.token}` } }, resolve);
      req.on('error', reject);
      closers.push(() => req.destroy());
    });
    expect(res.statusCode).toBe(200);
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
});
