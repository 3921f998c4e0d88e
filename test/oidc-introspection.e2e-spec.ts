import { TestIdentityProvider } from './support/oidc-provider';
import { bearer, createOrg, createTestApp, TestApp, TestOrg } from './support/test-app';

/**
 * With OIDC_INTROSPECTION_URL, a token the identity provider revoked is refused: a signature and
 * `exp` say only that the provider issued it and when it ends, and a person the organization
 * removed kept every token until then. The provider's introspection endpoint (RFC 7662) runs on a
 * loopback port inside the test, reached through the egress policy.
 */
describe('tokens asked about at the identity provider (e2e)', () => {
  let idp: TestIdentityProvider;
  let t: TestApp;
  let held: TestApp;
  let org: TestOrg;

  beforeAll(async () => {
    idp = await TestIdentityProvider.start();
    t = await createTestApp({ config: { oidc: idp.config({ introspection: idp.introspection(0) }) } });
    held = await createTestApp({ config: { oidc: idp.config({ introspection: idp.introspection(60_000) }) } });
    org = await createOrg(t);
    // The same organization, by slug, on the second server's own database.
    await held.http
      .post('/api/v1/orgs')
      .set(...bearer(held.adminToken))
      .send({ slug: 'held', name: 'Held' })
      .expect(201);
  });
  afterAll(async () => {
    await t.close();
    await held.close();
    await idp.close();
  });
  afterEach(() => (idp.introspectionAnswer = undefined));

  const person = (orgRef: string) => idp.token({ claims: { org_id: orgRef, roles: ['viewer'] } });
  const me = (app: TestApp, token: string) => app.http.get('/api/v1/me').set(...bearer(token));
  const introspected = () => idp.requests.filter((p) => p === '/introspect').length;

  it('takes a token the provider holds active, refuses it once revoked, and leaves the person’s other tokens alone', async () => {
    const token = await person(org.id);
    const other = await person(org.id);
    await me(t, token).expect(200);
    idp.revoked.add(token);
    const refused = await me(t, token).expect(401);
    expect(refused.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(refused.body).toMatchObject({ code: 'unauthorized', detail: expect.stringContaining('no longer holds the token active') });
    await me(t, other).expect(200);
    // The node asked as its client (the provider refuses any other), one question a request.
    const asked = idp.headers.filter((_h, i) => idp.requests[i] === '/introspect');
    expect(asked.every((h) => h.authorization?.startsWith('Basic ') && h['content-type'] === 'application/x-www-form-urlencoded')).toBe(true);
  });

  it('refuses 503, not 200, while the provider cannot say; and asks nothing for a token that does not verify', async () => {
    const token = await person(org.id);
    for (const answer of [
      { status: 500, body: '{"error":"server_error"}' },
      { status: 200, body: '<html>maintenance</html>' },
      { status: 200, body: '{"active":"yes"}' },
    ]) {
      idp.introspectionAnswer = answer;
      const res = await me(t, token).expect(503);
      expect(res.body.code).toBe('service_unavailable');
    }
    idp.introspectionAnswer = undefined;
    await me(t, token).expect(200);
    const before = introspected();
    const forged = `${token.slice(0, token.lastIndexOf('.'))}.${'A'.repeat(40)}`;
    await me(t, forged).expect(401);
    await me(t, 'not-a-jwt').expect(401);
    expect(introspected()).toBe(before);
  });

  it('holds an answer for OIDC_INTROSPECTION_CACHE_SECONDS: asked once for many requests, a revocation seen when it lapses', async () => {
    const token = await person('held');
    const before = introspected();
    await Promise.all(Array.from({ length: 5 }, () => me(held, token).expect(200)));
    await me(held, token).expect(200);
    expect(introspected() - before).toBe(1);
    idp.revoked.add(token);
    // Within the minute the answer stands: the lag an operator chooses.
    await me(held, token).expect(200);
  });
});
