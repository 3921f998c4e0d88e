import { ThrottlerStorage } from '@nestjs/throttler';
import { ThrottlerStorageService } from '@nestjs/throttler';
import { bearer, createOrg, createTestApp, TestApp, TestOrg } from './support/test-app';

describe('rate limits', () => {
  let t: TestApp;
  let org: TestOrg;
  let other: TestOrg;
  beforeAll(async () => {
    t = await createTestApp();
    org = await createOrg(t);
    other = await createOrg(t);
    // Limits are read per request, so they can be tightened after set-up.
    Object.assign(t.config.rateLimit, { windowSeconds: 60, perKey: 5, perOrg: 8, authFailures: 3 });
  });
  afterAll(() => t.close());

  it('limits one API key, answering 429 with Retry-After as a problem document', async () => {
    for (let i = 0; i < 5; i++)
      await t.http
        .get('/api/v1/me')
        .set(...bearer(org.keys.viewer))
        .expect(200);
    const res = await t.http
      .get('/api/v1/me')
      .set(...bearer(org.keys.viewer))
      .expect(429);
    expect(res.body.code).toBe('rate_limited');
    expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
    expect(Number(res.headers['retry-after'])).toBeLessThanOrEqual(60);
    // Another key of the same organization still has room of its own...
    await t.http
      .get('/api/v1/me')
      .set(...bearer(org.keys.builder))
      .expect(200);
  });

  it('limits the organization across its keys', async () => {
    // Counted against the org so far: viewer 5 (its refused 6th is not), builder 1. Limit 8.
    await t.http
      .get('/api/v1/me')
      .set(...bearer(org.keys.agent))
      .expect(200);
    await t.http
      .get('/api/v1/me')
      .set(...bearer(org.keys.approver))
      .expect(200);
    const res = await t.http
      .get('/api/v1/me')
      .set(...bearer(org.keys.admin))
      .expect(429);
    expect(res.body.detail).toMatch(/organization/);
    // ...and another organization is untouched.
    await t.http
      .get('/api/v1/me')
      .set(...bearer(other.keys.viewer))
      .expect(200);
  });

  it('limits failed authentications per address, and still serves valid keys from it', async () => {
    for (let i = 0; i < 3; i++)
      await t.http
        .get('/api/v1/me')
        .set(...bearer('cpk_wrong' + i))
        .expect(401);
    const res = await t.http
      .get('/api/v1/me')
      .set(...bearer('cpk_wrong'))
      .expect(429);
    expect(res.body.code).toBe('rate_limited');
    expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
    await t.http
      .get('/api/v1/me')
      .set(...bearer('cpk_wrong_again'))
      .expect(429);
    // Another client behind the same address, with a valid key, is not locked out.
    await t.http
      .get('/api/v1/me')
      .set(...bearer(other.keys.admin))
      .expect(200);
  });
});

describe('a shared rate-limit store', () => {
  it('is used by every node given it, so limits hold across nodes', async () => {
    const shared: ThrottlerStorage = new ThrottlerStorageService();
    const a = await createTestApp({ rateLimitStore: shared });
    const b = await createTestApp({ rateLimitStore: shared });
    try {
      // Two nodes over two databases stand in for two nodes over one: what is shared here is the store.
      Object.assign(a.config.rateLimit, { perKey: 3 });
      Object.assign(b.config.rateLimit, { perKey: 3 });
      const asAdmin = (t: TestApp) => t.http.get('/api/v1/me').set(...bearer(t.adminToken));
      // Both nodes count the key "platform".
      await asAdmin(a).expect(200);
      await asAdmin(b).expect(200);
      await asAdmin(a).expect(200);
      await asAdmin(b).expect(429);
    } finally {
      await a.close();
      await b.close();
    }
  });
});
