import { Logger } from '@nestjs/common';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK } from 'jose';
import { createServer, Server } from 'node:http';
import { AddressInfo } from 'node:net';
import { testConfig } from '../../../test/support/test-app';
import { ApiError } from '../../common/api-error';
import { EgressService } from '../../egress/egress.service';
import { OidcAuthenticator } from './oidc-authenticator.service';
import type { OidcOrgsRepository } from './oidc-orgs.repository';
import type { PeopleRepository } from './people.repository';

const AUDIENCE = 'https://gateway.test/api';
const EGRESS_TIMEOUT_MS = 300;

/**
 * An identity provider whose discovery document misbehaves after its headers, as asked: a byte
 * every 100 ms (`trickle`), more than any document needs (`flood`), or nothing wrong (`ok`).
 */
async function provider() {
  const { privateKey, publicKey } = await generateKeyPair('RS256');
  const jwk: JWK = { ...(await exportJWK(publicKey)), kid: 'k1', alg: 'RS256', use: 'sig' };
  const state = { mode: 'ok' as 'ok' | 'trickle' | 'flood', discoveries: 0, closed: [] as Array<Promise<{ written: number; ms: number }>> };
  let issuer = '';
  const server: Server = createServer((req, res) => {
    const at = Date.now();
    let written = 0;
    let ended = false;
    state.closed.push(new Promise((resolve) => req.socket.once('close', () => ((ended = true), resolve({ written, ms: Date.now() - at })))));
    if (req.url === '/jwks') return void res.end(JSON.stringify({ keys: [jwk] }));
    state.discoveries++;
    res.writeHead(200, { 'content-type': 'application/json' });
    if (state.mode === 'ok') return void res.end(JSON.stringify({ issuer, jwks_uri: `${issuer}/jwks` }));
    res.flushHeaders();
    if (state.mode === 'trickle') {
      const tick = setInterval(() => (ended ? clearInterval(tick) : ((written += 1), res.write(' '))), 100);
      return;
    }
    const chunk = Buffer.alloc(64 * 1024, ' ');
    const pump = (): void => {
      while (!ended) {
        written += chunk.length;
        if (!res.write(chunk)) return void res.once('drain', pump);
      }
    };
    pump();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const token = () =>
    new SignJWT({ org: 'acme', roles: ['viewer'] })
      .setProtectedHeader({ alg: 'RS256', kid: 'k1' })
      .setIssuer(issuer)
      .setAudience(AUDIENCE)
      .setSubject('person-1')
      .setExpirationTime('5m')
      .sign(privateKey as CryptoKey);
  return { server, state, issuer, token };
}

describe('OidcAuthenticator against a provider that misbehaves after its headers', () => {
  let idp: Awaited<ReturnType<typeof provider>>;
  let egress: EgressService;
  let authenticator: OidcAuthenticator;
  const orgs = { findByIdOrSlug: async () => ({ id: 'org-1', scopes: [] }) } as unknown as OidcOrgsRepository;
  // The directory's writes are tested end to end (test/principals.e2e-spec.ts); here only that nothing else changes.
  const people = { seen: async () => undefined } as unknown as PeopleRepository;
  const configWith = (requestTimeoutMs: number) =>
    testConfig({
      egress: { allowedHosts: ['127.0.0.1'], connectTimeoutMs: 1000, requestTimeoutMs },
      oidc: {
        issuer: idp.issuer,
        audience: AUDIENCE,
        orgClaim: 'org',
        rolesClaim: 'roles',
        clockSkewSeconds: 30,
        keyRefreshCooldownMs: 0,
        keysMaxAgeMs: 600_000,
      },
    });

  beforeAll(async () => {
    Logger.overrideLogger(false);
    idp = await provider();
    const config = configWith(EGRESS_TIMEOUT_MS);
    egress = new EgressService(config);
    authenticator = new OidcAuthenticator(config, egress, orgs, people);
  });
  afterAll(async () => {
    await egress.onModuleDestroy();
    idp.server.closeAllConnections();
    await new Promise((r) => idp.server.close(r));
  });

  const refusal = (promise: Promise<unknown>) =>
    promise.then(
      () => {
        throw new Error('expected a refusal');
      },
      (err: unknown) => err as ApiError,
    );

  it('a discovery document that trickles fails every waiting sign-in within the deadline, closes the socket, and a recovered provider is asked again', async () => {
    idp.state.mode = 'trickle';
    const started = Date.now();
    const token = await idp.token();
    // Concurrent sign-ins share the one fetch; none of them may wait on it past the deadline.
    const refused = await Promise.all(Array.from({ length: 5 }, () => refusal(authenticator.authenticate(token))));
    expect(Date.now() - started).toBeLessThan(2000);
    expect(refused.map((e) => e.code)).toEqual(Array(5).fill('service_unavailable'));
    expect(idp.state.discoveries).toBe(1);
    expect((await idp.state.closed.at(-1)!).ms).toBeLessThan(2000);

    idp.state.mode = 'ok';
    await expect(authenticator.authenticate(token)).resolves.toMatchObject({ type: 'oidc', orgId: 'org-1', subject: 'person-1' });
  });

  it('a discovery document past 512 KiB is refused once that much is read, and its socket is closed', async () => {
    const fresh = new OidcAuthenticator(configWith(5000), egress, orgs, people);
    idp.state.mode = 'flood';
    const err = await refusal(fresh.authenticate(await idp.token()));
    expect(err.code).toBe('service_unavailable');
    const socket = await idp.state.closed.at(-1)!;
    expect(socket.written).toBeLessThan(16 * 1024 * 1024);
  });
});
