import { TestIdentityProvider } from './support/oidc-provider';
import { createTestApp, TestApp } from './support/test-app';

const AGENT = '00000000-0000-4000-8000-000000000000';
const METADATA = `/.well-known/oauth-protected-resource/api/v1/agents/${AGENT}/mcp`;

/**
 * Behind a load balancer every request arrives from its address, over its scheme: TRUST_PROXY
 * names the proxies whose X-Forwarded-* headers are believed, so the failed-authentication limit
 * counts clients and the sign-in metadata names the URL they called. Unset, a client's own
 * headers change nothing.
 */
describe('TRUST_PROXY (e2e)', () => {
  let idp: TestIdentityProvider;
  let trusted: TestApp;
  let direct: TestApp;

  beforeAll(async () => {
    idp = await TestIdentityProvider.start();
    const oidc = idp.config();
    const rateLimit = { windowSeconds: 60, perKey: 0, perOrg: 0, authFailures: 3, redisPrefix: 'cp:rl:' };
    trusted = await createTestApp({ config: { oidc, rateLimit, trustProxy: ['127.0.0.1', '::1/128'] } });
    direct = await createTestApp({ config: { oidc, rateLimit } });
  });
  afterAll(async () => {
    await trusted.close();
    await direct.close();
    await idp.close();
  });

  const failedSignIn = (t: TestApp, client: string) => t.http.get('/api/v1/me').set('Authorization', 'Bearer cpk_nope').set('X-Forwarded-For', client);

  it("counts failed authentications per client behind a trusted proxy, and per connection's address otherwise", async () => {
    for (let i = 0; i < 3; i++) await failedSignIn(trusted, '203.0.113.7').expect(401);
    await failedSignIn(trusted, '203.0.113.7').expect(429);
    // Another client behind the same proxy is not held to the first one's failures.
    await failedSignIn(trusted, '203.0.113.8').expect(401);

    // Not trusted: the header is the client's own say, and every client here is one address.
    for (let i = 0; i < 3; i++) await failedSignIn(direct, `198.51.100.${i}`).expect(401);
    await failedSignIn(direct, '198.51.100.99').expect(429);
  });

  it('counts an IPv6 client by its /64, so a new address for each guess is still the same client (attack round 15, R-F1)', async () => {
    // Was: 40 failures from 2001:db8:1:2::1, ::2, … all 401, never 429 (each address its own count).
    for (let i = 1; i <= 3; i++) await failedSignIn(trusted, `2001:db8:1:2::${i.toString(16)}`).expect(401);
    await failedSignIn(trusted, '2001:db8:1:2:abcd:ef01:2345:6789').expect(429);
    await failedSignIn(trusted, '2001:0db8:0001:0002::ffff').expect(429);
    // The next /64 is another network's.
    await failedSignIn(trusted, '2001:db8:1:3::1').expect(401);
  });

  it('names the scheme and host the client called in the sign-in metadata, and caches by them', async () => {
    const behind = await trusted.http
      .get(METADATA)
      .set('Host', '10.0.0.5:3000')
      .set('X-Forwarded-Proto', 'https')
      .set('X-Forwarded-Host', 'gateway.example.com')
      .expect(200);
    expect(behind.body.resource).toBe(`https://gateway.example.com/api/v1/agents/${AGENT}/mcp`);
    expect(behind.headers.vary).toBe('Host, X-Forwarded-Host, X-Forwarded-Proto');
    const spoofed = await direct.http
      .get(METADATA)
      .set('Host', 'gateway.example.com')
      .set('X-Forwarded-Proto', 'https')
      .set('X-Forwarded-Host', 'evil.example')
      .expect(200);
    expect(spoofed.body.resource).toBe(`http://gateway.example.com/api/v1/agents/${AGENT}/mcp`);
    expect(spoofed.headers.vary).toBe('Host');
  });
});
