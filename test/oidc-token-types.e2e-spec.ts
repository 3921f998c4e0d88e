import { TestIdentityProvider } from './support/oidc-provider';
import { bearer, createOrg, createTestApp, TestApp, TestOrg } from './support/test-app';

/**
 * An ID token is not an access token, though the provider signs both with the same keys: where the
 * client's id is also `OIDC_AUDIENCE`, an ID token (which front ends pass on as proof of who signed
 * in) was accepted as the person's bearer token, `admin` included (attack round 9, C-F3). A token
 * that says it is something else (its `typ`, an ID token's own claims) is refused `401`.
 */
describe('access tokens only (e2e)', () => {
  let idp: TestIdentityProvider;
  let t: TestApp;
  let org: TestOrg;

  beforeAll(async () => {
    idp = await TestIdentityProvider.start();
    t = await createTestApp({
      config: {
        oidc: idp.config(),
      },
    });
    org = await createOrg(t);
  });
  afterAll(async () => {
    await t.close();
    await idp.close();
  });

  const me = (token: string) => t.http.get('/api/v1/me').set(...bearer(token));

  it("refuses an ID token: Keycloak's (typ ID, at_hash), Google's (at_hash), one typed by name; and a logout token", async () => {
    const claims = { org_id: org.id, roles: ['admin'] };
    const refused: [Parameters<TestIdentityProvider['token']>[0], RegExp][] = [
      [{ header: { typ: 'JWT' }, claims: { ...claims, typ: 'ID', azp: 'console', nonce: 'n', at_hash: 'h' } }, /carries at_hash/],
      [{ header: { typ: 'JWT' }, claims: { ...claims, typ: 'ID', azp: 'console' } }, /typ "ID"/],
      [{ header: { typ: undefined }, claims: { ...claims, at_hash: 'h' } }, /carries at_hash/],
      [{ header: { typ: 'id_token+jwt' }, claims }, /not an access token's/],
      [{ header: { typ: 'logout+jwt' }, claims: { ...claims, events: { 'http://schemas.openid.net/event/backchannel-logout': {} } } }, /not an access token's/],
    ];
    for (const [options, detail] of refused) {
      const res = await me(await idp.token(options)).expect(401);
      expect(res.body).toMatchObject({ code: 'unauthorized', detail: expect.stringMatching(detail) });
    }
  });

  it("refuses tokens that say they are another kind by a claim: Cognito's ID token, Keycloak's logout token, a security event (attack round 12, H-F2)", async () => {
    const claims = { org_id: org.id, roles: ['admin'] };
    const refused: [Parameters<TestIdentityProvider['token']>[0], RegExp][] = [
      [{ header: { typ: undefined }, claims: { ...claims, token_use: 'id', 'cognito:username': 'ann' } }, /token_use "id"/],
      [
        { header: { typ: 'JWT' }, claims: { ...claims, typ: 'Logout', sid: 's', events: { 'http://schemas.openid.net/event/backchannel-logout': {} } } },
        /typ "Logout"/,
      ],
      [{ header: { typ: 'JWT' }, claims: { ...claims, events: { 'http://schemas.openid.net/event/backchannel-logout': {} } } }, /security event token/],
    ];
    for (const [options, detail] of refused) {
      const res = await me(await idp.token(options)).expect(401);
      expect(res.body).toMatchObject({ code: 'unauthorized', detail: expect.stringMatching(detail) });
    }
    await me(await idp.token({ header: { typ: undefined }, claims: { ...claims, token_use: 'access' } })).expect(200);
  });

  it('refuses a DPoP-bound or certificate-bound token presented as a bearer token (attack round 12, H-F1)', async () => {
    const claims = { org_id: org.id, roles: ['admin'] };
    for (const cnf of [{ jkt: '0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I' }, { 'x5t#S256': 'bwcK0esc3ACC3DB2Y5_lESsXE8o9ltc05O89jdN-dg2' }]) {
      const token = await idp.token({ claims: { ...claims, cnf } });
      const res = await me(token).expect(401);
      expect(res.body).toMatchObject({ code: 'unauthorized', detail: expect.stringMatching(/bound to a key \(cnf/) });
      // Nor on a route that acts: the binding is the token's defence against a stolen copy.
      await t.http
        .post(`/api/v1/orgs/${org.id}/api-keys`)
        .set(...bearer(token))
        .send({ name: 'stolen', roles: ['admin'] })
        .expect(401);
    }
  });

  it('takes access tokens typed at+jwt, JWT or not at all, with a nonce or Keycloak typ Bearer', async () => {
    const claims = { org_id: org.id, roles: ['viewer'] };
    for (const options of [
      { claims },
      { header: { typ: 'JWT' }, claims: { ...claims, typ: 'Bearer', nonce: 'n' } },
      { header: { typ: undefined }, claims },
      { header: { typ: 'application/at+jwt' }, claims },
    ]) {
      const res = await me(await idp.token(options)).expect(200);
      expect(res.body).toMatchObject({ type: 'oidc', roles: ['viewer'] });
    }
  });
});

describe('access tokens typed at+jwt only, when the operator requires it (e2e)', () => {
  let idp: TestIdentityProvider;
  let t: TestApp;
  let org: TestOrg;

  beforeAll(async () => {
    idp = await TestIdentityProvider.start();
    t = await createTestApp({
      config: {
        oidc: idp.config({ requireAccessTokenType: true }),
      },
    });
    org = await createOrg(t);
  });
  afterAll(async () => {
    await t.close();
    await idp.close();
  });

  it('refuses an ID token with no mark of one (typ JWT, no at_hash), and an untyped token; takes at+jwt', async () => {
    const claims = { org_id: org.id, roles: ['viewer'] };
    for (const header of [{ typ: 'JWT' }, { typ: undefined }]) {
      const res = await t.http
        .get('/api/v1/me')
        .set(...bearer(await idp.token({ header, claims: { ...claims, azp: 'console', nonce: 'n' } })))
        .expect(401);
      expect(res.body.detail).toMatch(/OIDC_REQUIRED_TOKEN_TYPE/);
    }
    await t.http
      .get('/api/v1/me')
      .set(...bearer(await idp.token({ claims })))
      .expect(200);
  });
});
