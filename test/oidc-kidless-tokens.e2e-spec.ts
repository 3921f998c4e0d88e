import { generateKeyPair } from 'jose';
import { MAX_KEYS_WITHOUT_KID } from '../src/auth/oidc/oidc-authenticator.service';
import { TestIdentityProvider } from './support/oidc-provider';
import { bearer, createOrg, createTestApp, TestApp, TestOrg } from './support/test-app';

const KEY_REFRESH_COOLDOWN_MS = 300;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * A token may name no `kid` (RFC 7515 makes it optional, and some providers leave it out): it then
 * matches every published key of its algorithm. While such a provider published its next key beside
 * the current one (a rotation), jose refused to choose and every sign-in was `401` "not signed by
 * a key the identity provider publishes" (attack round 12, H-F3). Each candidate is tried now, up
 * to MAX_KEYS_WITHOUT_KID, since anyone may send such a token.
 */
describe('tokens that name no key (e2e)', () => {
  let idp: TestIdentityProvider;
  let t: TestApp;
  let org: TestOrg;

  beforeAll(async () => {
    idp = await TestIdentityProvider.start();
    t = await createTestApp({ config: { oidc: idp.config({ keyRefreshCooldownMs: KEY_REFRESH_COOLDOWN_MS }) } });
    org = await createOrg(t);
  });
  afterAll(async () => {
    await t.close();
    await idp.close();
  });

  const me = (token: string) => t.http.get('/api/v1/me').set(...bearer(token));
  const kidless = (options: Parameters<TestIdentityProvider['token']>[0] = {}) =>
    idp.token({ ...options, header: { kid: undefined }, claims: { org_id: org.id, roles: ['viewer'], ...options.claims } });

  /** Publishes `count` more keys and lets the server fetch them (a token naming an unknown kid, past the cooldown). */
  async function publish(count: number): Promise<void> {
    for (let i = 0; i < count; i++) await idp.rotate();
    await sleep(KEY_REFRESH_COOLDOWN_MS + 50);
    await me(await idp.token({ kid: 'not-yet-known', claims: { org_id: org.id } })).expect(401);
  }

  it('verifies with whichever published key signed it, during a rotation too; a token no published key signed is 401', async () => {
    await me(await kidless()).expect(200);
    // The current key and the next: the token is signed by the second of the two.
    await publish(1);
    const res = await me(await kidless()).expect(200);
    expect(res.body).toMatchObject({ type: 'oidc', orgId: org.id, roles: ['viewer'] });

    const { privateKey } = await generateKeyPair('RS256');
    const forged = await me(await kidless({ key: privateKey })).expect(401);
    expect(forged.body).toMatchObject({ code: 'unauthorized', detail: expect.stringMatching(/signature does not verify/) });
    // A claim is still judged: an expired token is expired whichever key signed it.
    const expired = await me(await kidless({ expiresIn: -3600 })).expect(401);
    expect(expired.body.detail).toMatch(/expired/);
  });

  it('fetches the keys again for a token that no key held verifies: a provider that switched to a key published since (attack round 12, H-F4)', async () => {
    await sleep(KEY_REFRESH_COOLDOWN_MS + 50);
    // The provider retires every key it published and signs with a new one, which the server has not fetched.
    await idp.rotate({ retire: true });
    const fetches = () => idp.requests.filter((p) => p === '/jwks').length;
    const before = fetches();
    await me(await kidless()).expect(200);
    expect(fetches()).toBe(before + 1);
  });

  it(`tries at most ${MAX_KEYS_WITHOUT_KID} keys for one token`, async () => {
    // Keys published so far: 1. The token is signed by the last, the (MAX + 1)th candidate.
    await publish(MAX_KEYS_WITHOUT_KID);
    await me(await kidless()).expect(401);
    // Named by its kid, the same key verifies.
    await me(await idp.token({ claims: { org_id: org.id, roles: ['viewer'] } })).expect(200);
  });
});

describe('tokens that name no key, forged, under a long cooldown (e2e)', () => {
  let idp: TestIdentityProvider;
  let t: TestApp;
  let org: TestOrg;

  beforeAll(async () => {
    idp = await TestIdentityProvider.start();
    t = await createTestApp({ config: { oidc: idp.config({ keyRefreshCooldownMs: 600_000 }) } });
    org = await createOrg(t);
  });
  afterAll(async () => {
    await t.close();
    await idp.close();
  });

  it('a flood of forged kidless tokens asks the provider no more than the cooldown allows (attack round 12, H-F4)', async () => {
    const me = (token: string) => t.http.get('/api/v1/me').set(...bearer(token));
    await me(await idp.token({ claims: { org_id: org.id, roles: ['viewer'] } })).expect(200);
    const fetched = idp.requests.filter((p) => p === '/jwks').length;
    const { privateKey } = await generateKeyPair('RS256');
    const forged = await idp.token({ key: privateKey, header: { kid: undefined }, claims: { org_id: org.id, roles: ['admin'] } });
    for (let i = 0; i < 10; i++) await me(forged).expect(401);
    expect(idp.requests.filter((p) => p === '/jwks').length).toBe(fetched);
  });
});
