import { exportJWK, generateKeyPair, jwtVerify, SignJWT, type JWK } from 'jose';
import { KeysUnavailableError, OidcKeyStore } from './oidc-keys';

const ISSUER = 'https://idp.example.com';
const JWKS_URI = 'https://idp.example.com/jwks';

async function signingKey(kid: string) {
  const { privateKey, publicKey } = await generateKeyPair('RS256');
  const jwk: JWK = { ...(await exportJWK(publicKey)), kid, alg: 'RS256', use: 'sig' };
  const sign = (headerKid = kid) =>
    new SignJWT({ sub: 'u' }).setProtectedHeader({ alg: 'RS256', kid: headerKid }).setIssuer(ISSUER).setExpirationTime('5m').sign(privateKey);
  return { jwk, sign };
}

/** A provider the store reads through its one boundary, counting what it is asked. */
function provider(initial: JWK[]) {
  const state = { keys: initial, asked: [] as string[], down: false, issuer: ISSUER };
  const fetchJson = (url: string): Promise<unknown> => {
    state.asked.push(url);
    if (state.down) return Promise.reject(new Error('connect ECONNREFUSED'));
    if (url === `${ISSUER}/.well-known/openid-configuration`) return Promise.resolve({ issuer: state.issuer, jwks_uri: JWKS_URI });
    if (url === JWKS_URI) return Promise.resolve({ keys: state.keys });
    return Promise.reject(new Error(`unexpected ${url}`));
  };
  return { state, fetchJson };
}

describe('the identity provider key store', () => {
  let clock = 0;
  const now = () => clock;
  beforeEach(() => (clock = 1_000_000));

  it('fetches discovery and keys once, then verifies from the cache', async () => {
    const a = await signingKey('a');
    const idp = provider([a.jwk]);
    const store = new OidcKeyStore({ issuer: ISSUER, fetchJson: idp.fetchJson, refreshCooldownMs: 30_000, maxAgeMs: 600_000, now });
    for (let i = 0; i < 5; i++) await jwtVerify(await a.sign(), store.resolve, { issuer: ISSUER });
    expect(idp.state.asked).toEqual([`${ISSUER}/.well-known/openid-configuration`, JWKS_URI]);
    expect(store.fetches).toBe(1);
  });

  it('asks the provider at most once per cooldown, however many unknown kids arrive at once', async () => {
    const a = await signingKey('a');
    const idp = provider([a.jwk]);
    const store = new OidcKeyStore({ issuer: ISSUER, fetchJson: idp.fetchJson, refreshCooldownMs: 30_000, maxAgeMs: 600_000, now });
    await jwtVerify(await a.sign(), store.resolve);
    const flood = () =>
      Promise.allSettled(Array.from({ length: 200 }, (_, i) => a.sign(`random-${i}-${Math.random()}`).then((t) => jwtVerify(t, store.resolve))));
    // Within the cooldown of the first fetch: nobody is asked.
    const first = await flood();
    expect(first.every((r) => r.status === 'rejected' && /no applicable key/i.test(String(r.reason)))).toBe(true);
    expect(store.fetches).toBe(1);
    // Past it: the whole flood shares one fetch.
    clock += 30_000;
    await flood();
    expect(store.fetches).toBe(2);
    await flood();
    expect(store.fetches).toBe(2);
    expect(idp.state.asked.filter((u) => u === JWKS_URI)).toHaveLength(2);
  });

  it('picks up a rotated key: a new kid is fetched once the cooldown allows', async () => {
    const a = await signingKey('a');
    const b = await signingKey('b');
    const idp = provider([a.jwk]);
    const store = new OidcKeyStore({ issuer: ISSUER, fetchJson: idp.fetchJson, refreshCooldownMs: 1_000, maxAgeMs: 600_000, now });
    await jwtVerify(await a.sign(), store.resolve);
    idp.state.keys = [a.jwk, b.jwk];
    clock += 1_000;
    await expect(jwtVerify(await b.sign(), store.resolve)).resolves.toMatchObject({ protectedHeader: { kid: 'b' } });
    // The old key is gone from the set after the next rotation, and refused once fetched again.
    idp.state.keys = [b.jwk];
    clock += 600_000;
    await expect(jwtVerify(await a.sign(), store.resolve)).rejects.toThrow(/no applicable key/i);
    expect(store.fetches).toBe(3);
  });

  it('keeps the keys it has while the provider is down, and does not hammer it', async () => {
    const a = await signingKey('a');
    const idp = provider([a.jwk]);
    const warnings: string[] = [];
    const store = new OidcKeyStore({
      issuer: ISSUER,
      fetchJson: idp.fetchJson,
      refreshCooldownMs: 30_000,
      maxAgeMs: 60_000,
      now,
      onFetchError: (m) => warnings.push(m),
    });
    await jwtVerify(await a.sign(), store.resolve);
    idp.state.down = true;
    clock += 60_000;
    for (let i = 0; i < 20; i++) await jwtVerify(await a.sign(), store.resolve);
    expect(store.fetches).toBe(2);
    expect(warnings).toEqual(['connect ECONNREFUSED']);
  });

  it('a fetch that never settles fails every sign-in sharing it at fetchTimeoutMs, and the next one after the cooldown asks again', async () => {
    const a = await signingKey('a');
    const idp = provider([a.jwk]);
    let hang = true;
    const fetchJson = (url: string) => (hang ? new Promise<unknown>(() => undefined) : idp.fetchJson(url));
    const store = new OidcKeyStore({ issuer: ISSUER, fetchJson, refreshCooldownMs: 1_000, maxAgeMs: 600_000, fetchTimeoutMs: 100, now });
    const started = Date.now();
    const waiting = await Promise.allSettled(Array.from({ length: 5 }, async () => jwtVerify(await a.sign(), store.resolve)));
    expect(Date.now() - started).toBeLessThan(1000);
    expect(waiting.every((r) => r.status === 'rejected' && r.reason instanceof KeysUnavailableError)).toBe(true);
    expect(store.fetches).toBe(1);
    hang = false;
    clock += 1_000;
    await expect(jwtVerify(await a.sign(), store.resolve)).resolves.toMatchObject({ protectedHeader: { kid: 'a' } });
    expect(store.fetches).toBe(2);
  });

  it('once a refresh of old keys has failed, sign-ins use the keys held while the provider is retried in the background, not waiting on it', async () => {
    const a = await signingKey('a');
    const idp = provider([a.jwk]);
    let hang = false;
    const fetchJson = (url: string) => (hang ? new Promise<unknown>(() => undefined) : idp.fetchJson(url));
    // No fetch timeout: a sign-in that waited on a hung fetch would never end.
    const store = new OidcKeyStore({ issuer: ISSUER, fetchJson, refreshCooldownMs: 1_000, maxAgeMs: 60_000, now });
    await jwtVerify(await a.sign(), store.resolve);
    idp.state.down = true;
    clock += 60_000;
    // The first sign-in after the keys grew old waits for the refresh, which fails; the keys held answer.
    await expect(jwtVerify(await a.sign(), store.resolve)).resolves.toBeDefined();
    expect(store.fetches).toBe(2);
    // Now the provider is known to fail, and hangs: the next refresh starts, and nobody waits for it.
    hang = true;
    clock += 1_000;
    await expect(jwtVerify(await a.sign(), store.resolve)).resolves.toBeDefined();
    await expect(jwtVerify(await a.sign(), store.resolve)).resolves.toBeDefined();
    expect(store.fetches).toBe(3);
  });

  it('says the keys are unavailable when it never had any, and refuses a discovery document of another issuer', async () => {
    const a = await signingKey('a');
    const idp = provider([a.jwk]);
    idp.state.issuer = 'https://evil.example.com';
    const store = new OidcKeyStore({ issuer: ISSUER, fetchJson: idp.fetchJson, refreshCooldownMs: 30_000, maxAgeMs: 600_000, now });
    const err = await jwtVerify(await a.sign(), store.resolve).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(KeysUnavailableError);
    expect(String(err)).toMatch(/names issuer "https:\/\/evil.example.com"/);
  });

  it('ignores symmetric and private keys in the published set', async () => {
    const a = await signingKey('a');
    const idp = provider([{ kty: 'oct', kid: 'a', k: 'c2VjcmV0', alg: 'HS256' } as JWK]);
    const store = new OidcKeyStore({ issuer: ISSUER, fetchJson: idp.fetchJson, refreshCooldownMs: 30_000, maxAgeMs: 600_000, now });
    await expect(jwtVerify(await a.sign(), store.resolve)).rejects.toThrow(/no applicable key/i);
  });
});
