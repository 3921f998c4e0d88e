import { DataSource } from 'typeorm';
import { ApiKeyExpiryEvents } from '../src/auth/api-key-expiry-events';
import { bearer, createOrg, createTestApp, TestApp, TestOrg } from './support/test-app';

/**
 * An organization is told, in its audit log (so its event streams and webhooks), a week before one
 * of its keys expires (`api_key.expiring`) and when it has (`api_key.expired`): each once, whatever
 * the number of sweeps or nodes. Keys made to live less than the notice, revoked keys and keys
 * without an expiry are told nothing they did not ask for. The tests move keys' dates in the
 * database rather than wait a week.
 */
describe('API key expiry events (e2e)', () => {
  let t: TestApp;
  let org: TestOrg;
  let ds: DataSource;
  let expiries: ApiKeyExpiryEvents;
  beforeAll(async () => {
    t = await createTestApp();
    ds = t.app.get(DataSource);
    expiries = t.app.get(ApiKeyExpiryEvents);
    org = await createOrg(t);
  });
  afterAll(() => t.close());

  const key = async (name: string, expiresAt?: Date) =>
    (
      await t.http
        .post(`/api/v1/orgs/${org.id}/api-keys`)
        .set(...bearer(org.keys.admin))
        .send({ name, roles: ['agent'], ...(expiresAt ? { expiresAt: expiresAt.toISOString() } : {}) })
        .expect(201)
    ).body.id as string;
  const inDays = (days: number) => new Date(Date.now() + days * 86_400_000);
  const told = async (type: 'api_key.expiring' | 'api_key.expired') =>
    (
      (
        await t.http
          .get(`/api/v1/audit-events?type=${type}&limit=100`)
          .set(...bearer(org.keys.admin))
          .expect(200)
      ).body.items as { target: { id: string }; actor: { type: string; id: string }; data: Record<string, unknown> }[]
    ).map((e) => ({ id: e.target.id, actor: e.actor, data: e.data }));
  const setDates = (ids: string[], createdAt: string, expiresAt: string) =>
    ds.query(`UPDATE api_key SET created_at = now() + $2::interval, expires_at = now() + $3::interval WHERE id = ANY($1::uuid[])`, [ids, createdAt, expiresAt]);

  it('says a key is expiring once, a week ahead, and that it expired once, and nothing of keys that asked for nothing', async () => {
    const soon = await key('ci deploy', inDays(30));
    const later = await key('nightly export', inDays(30));
    const forever = await key('forever');
    const revoked = await key('revoked', inDays(30));
    const brief = await key('for an hour', inDays(2));
    await t.http
      .delete(`/api/v1/orgs/${org.id}/api-keys/${revoked}`)
      .set(...bearer(org.keys.admin))
      .expect(204);
    await setDates([soon, revoked], '-30 days', '3 days');

    await expiries.sweepOnce();
    await expiries.sweepOnce();
    const [row] = (await ds.query(`SELECT expires_at FROM api_key WHERE id = $1`, [soon])) as { expires_at: Date }[];
    expect(await told('api_key.expiring')).toEqual([
      {
        id: soon,
        actor: { type: 'system', id: 'api-key-expiry' },
        data: { name: 'ci deploy', roles: ['agent'], expiresAt: row.expires_at.toISOString() },
      },
    ]);
    expect(await told('api_key.expired')).toEqual([]);

    // Past their expiry: the noticed key, and the brief one (never noticed: it was made for less than a week).
    await setDates([soon, brief, revoked], '-30 days', '-1 second');
    await expiries.sweepOnce();
    await expiries.sweepOnce();
    const expired = await told('api_key.expired');
    expect(expired.map((e) => e.id).sort()).toEqual([soon, brief].sort());
    expect(expired.find((e) => e.id === brief)?.data).toMatchObject({ name: 'for an hour', roles: ['agent'] });
    expect((await told('api_key.expiring')).map((e) => e.id)).toEqual([soon]);
    for (const id of [later, forever]) {
      expect([...(await told('api_key.expiring')), ...expired].some((e) => e.id === id)).toBe(false);
    }
  });

  it('says each thing once when nodes sweep at once', async () => {
    const ids = await Promise.all(['a', 'b', 'c'].map((n) => key(`node race ${n}`, inDays(30))));
    await setDates(ids, '-30 days', '2 days');
    const claimed = (await Promise.all([expiries.tellDue(2), expiries.tellDue(2), expiries.tellDue(2)])).flat();
    expect(claimed.map((r) => r.id).sort()).toEqual([...ids].sort());
    await setDates(ids, '-30 days', '-1 second');
    await Promise.all([expiries.tellDue(500), expiries.tellDue(500)]);
    const expiring = (await told('api_key.expiring')).filter((e) => ids.includes(e.id));
    const expired = (await told('api_key.expired')).filter((e) => ids.includes(e.id));
    expect(expiring.map((e) => e.id).sort()).toEqual([...ids].sort());
    expect(expired.map((e) => e.id).sort()).toEqual([...ids].sort());
  });
});
