import { Logger } from '@nestjs/common';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK } from 'jose';
import { generateKeyPairSync } from 'node:crypto';
import { testConfig } from '../../../test/support/test-app';
import { ApiError } from '../../common/api-error';
import type { EgressService } from '../../egress/egress.service';
import { OidcAuthenticator } from './oidc-authenticator.service';
import { MAX_PROVIDER_KEYS } from './oidc-keys';
import type { OidcOrgsRepository } from './oidc-orgs.repository';
import type { PeopleRepository } from './people.repository';

const ISSUER = 'https://idp.example.com';
const AUDIENCE = 'https://gateway.test/api';

/**
 * What an identity provider publishes in its key set is read as it is: a provider that lists keys
 * no token can be verified with (points off their curve, a retired 1024-bit RSA key, an RSA key
 * whose public exponent is as long as its modulus) must not make a stranger's forged token cost
 * the node more than a verification, nor refuse its people's tokens. Attack round 20, AB-F1, AB-F2.
 */
describe('OidcAuthenticator with keys the provider publishes that no token can be verified with', () => {
  const orgs = { findByIdOrSlug: async () => ({ id: 'org-1', scopes: [] }) } as unknown as OidcOrgsRepository;
  const people = { seen: async () => undefined } as unknown as PeopleRepository;
  beforeAll(() => Logger.overrideLogger(false));

  /** An authenticator whose provider's discovery document and key set are `keys`, read through a stand-in for the egress. */
  function authenticatorFor(keys: unknown[]): OidcAuthenticator {
    const documents: Record<string, unknown> = {
      [`${ISSUER}/.well-known/openid-configuration`]: { issuer: ISSUER, jwks_uri: `${ISSUER}/jwks` },
      [`${ISSUER}/jwks`]: { keys },
    };
    const egress = { fetch: async (url: string) => new Response(JSON.stringify(documents[url])) } as unknown as EgressService;
    const config = testConfig({
      oidc: {
        issuer: ISSUER,
        audience: AUDIENCE,
        orgClaim: 'org',
        rolesClaim: 'roles',
        clockSkewSeconds: 30,
        keyRefreshCooldownMs: 30_000,
        keysMaxAgeMs: 600_000,
      },
    });
    return new OidcAuthenticator(config, egress, orgs, people);
  }

  const sign = (key: CryptoKey, header: { alg: string; kid?: string }) =>
    new SignJWT({ org: 'acme', roles: ['viewer'] })
      .setProtectedHeader(header)
      .setIssuer(ISSUER)
      .setAudience(AUDIENCE)
      .setSubject('person-1')
      .setExpirationTime('5m')
      .sign(key);

  const refusal = (promise: Promise<unknown>) =>
    promise.then(
      () => {
        throw new Error('expected a refusal');
      },
      (err: unknown) => err as ApiError,
    );

  it('3,000 keys off their curve beside the provider key: forged tokens naming no kid are refused at the cost of a verification, and its own still verify', async () => {
    const real = await generateKeyPair('ES256');
    const jwk = await exportJWK(real.publicKey);
    // y written as x: no point of P-256, so no import of it ever succeeds (about 50 µs a try, on the event loop).
    const broken = Array.from({ length: 3000 }, (_, i) => ({ ...jwk, x: jwk.y, kid: `broken-${i}` }));
    // The provider's key among them, within the first MAX_PROVIDER_KEYS (those past it are not used, and logged).
    const authenticator = authenticatorFor([...broken.slice(0, 50), { ...jwk, kid: 'real' }, ...broken.slice(50)]);
    const stranger = await generateKeyPair('ES256');
    const forged = await sign(stranger.privateKey, { alg: 'ES256' });
    // The first sign-in fetches the key set.
    expect((await refusal(authenticator.authenticate(forged))).status).toBe(401);

    const started = performance.now();
    for (let i = 0; i < 20; i++) expect((await refusal(authenticator.authenticate(forged))).status).toBe(401);
    const elapsed = performance.now() - started;
    // Was 150 to 200 ms a token on an idle machine (3 to 4 s for 20): each tried every broken key again.
    expect(elapsed).toBeLessThan(1500);

    await expect(authenticator.authenticate(await sign(real.privateKey, { alg: 'ES256' }))).resolves.toMatchObject({ subject: 'person-1' });
    await expect(authenticator.authenticate(await sign(real.privateKey, { alg: 'ES256', kid: 'real' }))).resolves.toMatchObject({ subject: 'person-1' });
  });

  it('keys past the first MAX_PROVIDER_KEYS of the set are not used', async () => {
    const keys = await Promise.all(Array.from({ length: MAX_PROVIDER_KEYS + 1 }, () => generateKeyPair('ES256')));
    const authenticator = authenticatorFor(await Promise.all(keys.map(async (k, i) => ({ ...(await exportJWK(k.publicKey)), kid: `k${i}` }))));
    await expect(
      authenticator.authenticate(await sign(keys[MAX_PROVIDER_KEYS - 1].privateKey, { alg: 'ES256', kid: `k${MAX_PROVIDER_KEYS - 1}` })),
    ).resolves.toMatchObject({
      subject: 'person-1',
    });
    const err = await refusal(authenticator.authenticate(await sign(keys[MAX_PROVIDER_KEYS].privateKey, { alg: 'ES256', kid: `k${MAX_PROVIDER_KEYS}` })));
    expect(err.detail).toBe('The token is not signed by a key the identity provider publishes.');
  });

  it("a retired 1024-bit RSA key listed first does not refuse the provider's people's tokens that name no kid", async () => {
    const retired = generateKeyPairSync('rsa', { modulusLength: 1024 }).publicKey.export({ format: 'jwk' });
    const current = await generateKeyPair('RS256');
    const authenticator = authenticatorFor([
      { ...retired, alg: 'RS256' },
      { ...(await exportJWK(current.publicKey)), alg: 'RS256' },
    ]);
    // Was 401 "not a well-formed, signed JWT": jose refuses a key under 2048 bits with a TypeError, and the next key was never tried.
    await expect(authenticator.authenticate(await sign(current.privateKey, { alg: 'RS256' }))).resolves.toMatchObject({ subject: 'person-1' });
  });

  it('an RSA key whose public exponent is as long as its modulus is not used: a token naming it is refused without a verification', async () => {
    const jwk = generateKeyPairSync('rsa', { modulusLength: 3072 }).publicKey.export({ format: 'jwk' }) as JWK;
    // Any odd number below the modulus is a valid exponent for a public-key operation: verifying with
    // it is a full modular exponentiation (6 to 9 ms a token here), where 65537 takes 0.2 ms.
    const modulus = Buffer.from(jwk.n!, 'base64url');
    const exponent = Buffer.from(modulus);
    exponent[0] >>= 1;
    exponent[exponent.length - 1] |= 1;
    const good = await generateKeyPair('RS256');
    const authenticator = authenticatorFor([
      { ...jwk, e: exponent.toString('base64url'), alg: 'RS256', kid: 'slow' },
      { ...(await exportJWK(good.publicKey)), alg: 'RS256', kid: 'good' },
    ]);
    const stranger = await generateKeyPair('RS256');
    const err = await refusal(authenticator.authenticate(await sign(stranger.privateKey, { alg: 'RS256', kid: 'slow' })));
    expect(err.status).toBe(401);
    // Was "The token's signature does not verify.": the key was used.
    expect(err.detail).toBe('The token is not signed by a key the identity provider publishes.');
    await expect(authenticator.authenticate(await sign(good.privateKey, { alg: 'RS256', kid: 'good' }))).resolves.toMatchObject({ subject: 'person-1' });
  });
});
