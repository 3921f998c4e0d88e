import { DataSource } from 'typeorm';
import { bearer, createOrg, createTestApp, TestApp, TestOrg } from './support/test-app';

/**
 * An organization makes at most API_KEYS_CREATED_PER_DAY keys in any 24 hours, whether they are
 * still live or not: the bound of 1,000 live keys never refused keys made to expire at once or
 * revoked as made, and each is a row and audit events kept for good (attack round 20, AB-N1).
 */
describe('API keys made in a day (e2e)', () => {
  const PER_DAY = 9;
  let t: TestApp;
  let ds: DataSource;
  beforeAll(async () => {
    t = await createTestApp({ config: { apiKeysCreatedPerDay: PER_DAY } });
    ds = t.app.get(DataSource);
  });
  afterAll(() => t.close());

  const create = (org: TestOrg, name: string, extra: object = {}) =>
    t.http
      .post(`/api/v1/orgs/${org.id}/api-keys`)
      .set(...bearer(org.keys.admin))
      .send({ name, roles: ['viewer'], ...extra });
  const made = async (orgId: string) => {
    const [{ keys, events }] = await ds.query(
      `SELECT (SELECT count(*)::int FROM api_key WHERE org_id = $1) AS keys,
              (SELECT count(*)::int FROM audit_event WHERE org_id = $1 AND type = 'api_key.created') AS events`,
      [orgId],
    );
    return { keys, events };
  };

  it('counts revoked and expired keys, refuses the next with 429 and Retry-After, makes nothing, and lets the day pass', async () => {
    const org = await createOrg(t); // five keys, one a role
    const revoked = await create(org, 'revoked as made').expect(201);
    await t.http
      .delete(`/api/v1/orgs/${org.id}/api-keys/${revoked.body.id}`)
      .set(...bearer(org.keys.admin))
      .expect(204);
    await create(org, 'expires at once', { expiresAt: new Date(Date.now() + 1500).toISOString() }).expect(201);
    await create(org, 'lives').expect(201);
    await create(org, 'the ninth').expect(201);
    await new Promise((r) => setTimeout(r, 1600));
    const before = await made(org.id);
    expect(before).toEqual({ keys: PER_DAY, events: PER_DAY });

    const refused = await create(org, 'one too many').expect(429);
    expect(refused.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(refused.body).toMatchObject({ status: 429, code: 'rate_limited', detail: expect.stringContaining(`at most ${PER_DAY} API keys in any 24 hours`) });
    const retryAfter = Number(refused.headers['retry-after']);
    expect(retryAfter).toBeGreaterThan(86_400 - 120);
    expect(retryAfter).toBeLessThanOrEqual(86_400);
    expect(await made(org.id)).toEqual(before);
    // The platform's token makes the organization's keys too, and is counted with them.
    await t.http
      .post(`/api/v1/orgs/${org.id}/api-keys`)
      .set(...bearer(t.adminToken))
      .send({ name: 'platform', roles: ['viewer'] })
      .expect(429);

    // Another organization's day is its own.
    const other = await createOrg(t);
    await create(other, 'theirs').expect(201);

    // A day later (the organization's keys made a day and a minute ago), it makes keys again.
    await ds.query(`UPDATE api_key SET created_at = created_at - interval '1 day 1 minute' WHERE org_id = $1`, [org.id]);
    await create(org, 'the next day').expect(201);
  });

  it('counts creations at once one after another: exactly the room left is made', async () => {
    const org = await createOrg(t);
    const answers = await Promise.all(Array.from({ length: 10 }, (_, i) => create(org, `at once ${i}`)));
    const statuses = answers.map((a) => a.status).sort();
    expect(statuses).toEqual([...Array(PER_DAY - 5).fill(201), ...Array(10 - (PER_DAY - 5)).fill(429)]);
    expect(await made(org.id)).toEqual({ keys: PER_DAY, events: PER_DAY });
  });
});
