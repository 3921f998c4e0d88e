import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { principalIdOf } from '../src/auth/oidc/oidc-claims';
import { TestIdentityProvider } from './support/oidc-provider';
import { bearer, createOrg, createTestApp, TestApp, TestOrg } from './support/test-app';

/**
 * Records hold who acted by id: a key's, or a UUID derived from a person's issuer and `sub`.
 * `GET /principals` says who that is, within the caller's organization only.
 */
describe('GET /principals (e2e)', () => {
  let idp: TestIdentityProvider;
  let t: TestApp;
  let org: TestOrg;
  let other: TestOrg;

  beforeAll(async () => {
    idp = await TestIdentityProvider.start();
    t = await createTestApp({
      config: {
        oidc: idp.config(),
      },
    });
    org = await createOrg(t);
    other = await createOrg(t);
  });
  afterAll(async () => {
    await t.close();
    await idp.close();
  });

  const names = (token: string, ids: string) => t.http.get(`/api/v1/principals?ids=${ids}`).set(...bearer(token));

  it("names the organization's keys, revoked ones with when, and leaves out another organization's ids and unknown ones", async () => {
    await t.http
      .delete(`/api/v1/orgs/${org.id}/api-keys/${org.keyIds.builder}`)
      .set(...bearer(org.keys.admin))
      .expect(204);
    const res = await names(org.keys.viewer, [org.keyIds.agent, org.keyIds.builder.toUpperCase(), other.keyIds.agent, randomUUID()].join(',')).expect(200);
    expect(res.body.items).toEqual(
      expect.arrayContaining([
        { id: org.keyIds.agent, type: 'api_key', name: 'agent' },
        { id: org.keyIds.builder, type: 'api_key', name: 'builder', revokedAt: expect.any(String) },
      ]),
    );
    expect(res.body.items).toHaveLength(2);
    // Repeated parameters are the same list as commas.
    const repeated = await t.http
      .get(`/api/v1/principals?ids=${org.keyIds.agent}&ids=${org.keyIds.approver}`)
      .set(...bearer(org.keys.approver))
      .expect(200);
    expect(repeated.body.items.map((p: { name: string }) => p.name).sort()).toEqual(['agent', 'approver']);
  });

  it('says when a key expires, or expired, so an expired requester does not read as a live key (V-F6)', async () => {
    const at = new Date(Date.now() + 3_600_000).toISOString();
    const made = await t.http
      .post(`/api/v1/orgs/${org.id}/api-keys`)
      .set(...bearer(org.keys.admin))
      .send({ name: 'contractor', roles: ['agent'], expiresAt: at })
      .expect(201);
    expect((await names(org.keys.viewer, made.body.id).expect(200)).body.items).toEqual([
      { id: made.body.id, type: 'api_key', name: 'contractor', expiresAt: at },
    ]);
    // An UPDATE answers [rows, count] through TypeORM.
    const [[{ past }]]: [{ past: Date }[], number] = await t.app
      .get(DataSource)
      .query(`UPDATE api_key SET expires_at = now() - interval '1 second' WHERE id = $1 RETURNING expires_at AS past`, [made.body.id]);
    expect((await names(org.keys.viewer, made.body.id).expect(200)).body.items).toEqual([
      { id: made.body.id, type: 'api_key', name: 'contractor', expiresAt: past.toISOString() },
    ]);
  });

  it('names a person who signed in by the sub their records are held under, in their own organization only', async () => {
    const sub = `alice-${randomUUID()}@example.com`;
    const token = await idp.token({ claims: { sub, org_id: org.id, roles: ['viewer'] } });
    await t.http
      .get('/api/v1/me')
      .set(...bearer(token))
      .expect(200);
    const id = principalIdOf(idp.issuer, sub);
    const res = await names(token, id).expect(200);
    expect(res.body.items).toEqual([{ id, type: 'oidc', name: sub }]);
    await names(other.keys.viewer, id)
      .expect(200)
      .expect(({ body }) => expect(body.items).toEqual([]));
    // Signing in again writes nothing more, and the name stays.
    await t.http
      .get('/api/v1/me')
      .set(...bearer(await idp.token({ claims: { sub, org_id: org.id, roles: ['viewer'] } })))
      .expect(200);
    expect((await names(org.keys.viewer, id).expect(200)).body.items).toEqual([{ id, type: 'oidc', name: sub }]);
  });

  it('refuses a missing, malformed or over-long list naming `ids`, and an agent key', async () => {
    for (const query of ['', '?ids=', '?ids=nope', `?ids=${Array.from({ length: 101 }, () => randomUUID()).join(',')}`, '?ids[__proto__]=x']) {
      const res = await t.http
        .get(`/api/v1/principals${query}`)
        .set(...bearer(org.keys.viewer))
        .expect(400);
      expect(res.body).toMatchObject({
        code: 'invalid_request',
        errors: expect.arrayContaining([expect.objectContaining({ path: expect.stringMatching(/^ids(\[\d+\])?$/) })]),
      });
    }
    await names(org.keys.agent, org.keyIds.agent).expect(403);
  });
});
