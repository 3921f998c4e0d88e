import { parseEnvironment } from '../src/config/app-config';
import { parseOrigins } from '../src/config/http-config';
import { bearer, createTestApp, TestApp } from './support/test-app';

/** API.md "Events, webhooks, browsers": CORS_ORIGINS. */
describe('CORS (e2e)', () => {
  let t: TestApp;
  const allowed = 'https://app.example.com';
  const preflight = (origin: string, path = '/api/v1/me', method = 'GET', headers = 'authorization') =>
    t.http.options(path).set('Origin', origin).set('Access-Control-Request-Method', method).set('Access-Control-Request-Headers', headers);

  beforeAll(async () => {
    t = await createTestApp({ config: { corsOrigins: [allowed, 'http://localhost:5173'] } });
  }, 180_000);
  afterAll(() => t.close());

  it('answers a preflight from an allowed origin, before authentication', async () => {
    const res = await preflight(
      allowed,
      '/api/v1/agents/00000000-0000-4000-8000-000000000000/tool-calls',
      'POST',
      'authorization,content-type,idempotency-key',
    ).expect(204);
    expect(res.headers['access-control-allow-origin']).toBe(allowed);
    expect(res.headers['access-control-allow-methods']).toBe('GET, POST, PUT, DELETE');
    const allowedHeaders = res.headers['access-control-allow-headers'].toLowerCase().split(/,\s*/);
    expect(allowedHeaders).toEqual(expect.arrayContaining(['authorization', 'idempotency-key', 'last-event-id', 'content-type']));
    expect(res.headers['access-control-expose-headers']).toBe(
      'Retry-After, x-request-id, WWW-Authenticate, RateLimit-Limit, RateLimit-Remaining, RateLimit-Reset, Preference-Applied',
    );
    expect(res.headers['access-control-allow-credentials']).toBeUndefined();
    expect(res.headers.vary).toMatch(/Origin/);
  });

  it('allows Prefer (wait=N on starting a run) and exposes Preference-Applied', async () => {
    const res = await preflight(allowed, '/api/v1/agents/00000000-0000-4000-8000-000000000000/runs', 'POST', 'authorization,content-type,prefer').expect(204);
    expect(res.headers['access-control-allow-headers'].toLowerCase().split(/,\s*/)).toContain('prefer');
    expect(res.headers['access-control-expose-headers'].toLowerCase().split(/,\s*/)).toContain('preference-applied');
  });

  it('lets an allowed origin read answers, errors included, and see Retry-After and x-request-id', async () => {
    const ok = await t.http
      .get('/api/v1/me')
      .set('Origin', 'http://localhost:5173')
      .set(...bearer(t.adminToken))
      .expect(200);
    expect(ok.headers['access-control-allow-origin']).toBe('http://localhost:5173');
    expect(ok.headers['access-control-expose-headers']).toBe(
      'Retry-After, x-request-id, WWW-Authenticate, RateLimit-Limit, RateLimit-Remaining, RateLimit-Reset, Preference-Applied',
    );
    const refused = await t.http.get('/api/v1/me').set('Origin', allowed).set('Authorization', 'Bearer wrong').expect(401);
    expect(refused.headers['access-control-allow-origin']).toBe(allowed);
  });

  it('gives another origin no CORS header, preflight or not', async () => {
    for (const origin of ['https://evil.example.com', 'https://app.example.com.evil.com', 'http://app.example.com', 'null', 'https://APP.example.com']) {
      const pre = await preflight(origin);
      expect(pre.headers['access-control-allow-origin']).toBeUndefined();
      expect(pre.headers['access-control-allow-methods']).toBeUndefined();
      expect(pre.headers['access-control-allow-headers']).toBeUndefined();
      const res = await t.http
        .get('/api/v1/me')
        .set('Origin', origin)
        .set(...bearer(t.adminToken))
        .expect(200);
      expect(res.headers['access-control-allow-origin']).toBeUndefined();
      expect(res.headers['access-control-expose-headers']).toBeUndefined();
    }
  });

  it('CORS_ORIGINS takes origins only, and a bad one stops the start naming it', () => {
    expect(parseOrigins(' https://a.example.com, http://localhost:5173 ,https://b.example.com:8443/ ')).toEqual([
      'https://a.example.com',
      'http://localhost:5173',
      'https://b.example.com:8443',
    ]);
    expect(parseOrigins('')).toEqual([]);
    for (const bad of ['*', 'a.example.com', 'https://a.example.com/path', 'ftp://a.example.com', 'https://u:p@a.example.com', 'https://A.example.com']) {
      expect(parseOrigins(bad)).toBeUndefined();
      expect(() => parseEnvironment({ CORS_ORIGINS: bad })).toThrow(/CORS_ORIGINS/);
    }
  });
});
