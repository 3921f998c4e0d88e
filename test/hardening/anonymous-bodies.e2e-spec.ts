import { Body, Controller, Module, Post } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { Socket } from 'node:net';
import { PublicRoute } from '../../src/auth/access.decorator';
import { ConfigError, parseEnvironment } from '../../src/config/app-config';
import { DEFAULT_HTTP_LIMITS, DEFAULT_HTTP_TIMEOUTS } from '../../src/config/http-config';
import { resolveConfig } from '../../src/config/resolve-config';
import { rawClient } from '../support/raw-http';
import { walkRoutes } from '../support/routes';
import { bearer, createOrg, createTestApp, TestApp } from '../support/test-app';
import { until } from '../support/until';

/**
 * Bodies held before authentication. A request without any token was refused only once its whole
 * body (up to 1 MiB) had been read and parsed: anonymous connections each made the node hold a
 * megabyte for the 30 s the request timeout allows (3,000 of them, 3.2 GB). A request that carries
 * no bearer token is now refused before its body is read, and the bytes of bodies being read are
 * bounded per node, so a token-shaped header does not do the same.
 */
jest.setTimeout(120_000);

/** A public route under /api/v1, as one may be added: the check before the body must let it through. */
@Controller('api/v1/test-public-echo')
class PublicEchoController {
  @Post()
  @PublicRoute()
  echo(@Body() body: unknown): unknown {
    return { received: body };
  }
}
@Module({ controllers: [PublicEchoController] })
class PublicEchoModule {}

const ORIGIN = 'http://localhost:5173';
const BUDGET = 256 * 1024;

/** Writes `head` and nothing more; the answer is what arrived when the server closed the connection. */
const headersOnly = (port: number, head: string, sockets: Socket[]) => rawClient(port, head, sockets).answer;

describe('a request without a token is refused before its body is read', () => {
  let t: TestApp;
  let port: number;
  const sockets: Socket[] = [];
  beforeAll(async () => {
    // A short request timeout: the code before this answered such requests 408 once it passed.
    t = await createTestApp({
      imports: [PublicEchoModule],
      config: { corsOrigins: [ORIGIN], httpTimeouts: { ...DEFAULT_HTTP_TIMEOUTS, headersMs: 2000, requestMs: 3000, idleMs: 10_000 } },
    });
    await t.app.listen(0, '127.0.0.1');
    port = (t.app.getHttpServer().address() as { port: number }).port;
  }, 180_000);
  afterEach(() => {
    for (const s of sockets.splice(0)) s.destroy();
  });
  afterAll(() => t.close());

  const announcing = (method: string, path: string, extra = '') =>
    `${method} ${path} HTTP/1.1\r\nHost: localhost\r\nOrigin: ${ORIGIN}\r\nContent-Type: application/json\r\nContent-Length: 1000000\r\n${extra}\r\n`;

  it('on every route that needs one: the 401 of the guard, with WWW-Authenticate, before a byte of the body', async () => {
    const routes = walkRoutes(t).filter((r) => r.access !== 'public');
    expect(routes.length).toBeGreaterThan(40);
    const answers = await Promise.all(
      routes.map(
        async (r) => [`${r.method} ${r.path}`, await headersOnly(port, announcing(r.method, r.path.replace(/:\w+/g, randomUUID())), sockets)] as const,
      ),
    );
    for (const [route, answer] of answers) {
      expect([route, answer.status, answer.body.code]).toEqual([route, 401, 'unauthorized']);
      expect(answer.head).toMatch(/\r\nWWW-Authenticate: Bearer\r\n/i);
      expect(answer.head).toMatch(/\r\nContent-Type: application\/problem\+json/i);
      // A browser on an allowed origin reads it.
      expect(answer.head).toMatch(new RegExp(`\\r\\nAccess-Control-Allow-Origin: ${ORIGIN}\\r\\n`, 'i'));
    }
    // The guard's document, field for field: it still answers a token it does not know, once the body is read.
    const guarded = await t.http
      .post('/api/v1/orgs')
      .set(...bearer('cpk_unknown'))
      .send({ slug: 'x', name: 'x' })
      .expect(401);
    const early = answers.find(([route]) => route === 'POST /api/v1/orgs')![1];
    expect(early.body).toEqual(guarded.body);
  });

  it('likewise for an Authorization header that holds no bearer token', async () => {
    for (const header of ['Authorization: Basic dXNlcjpwYXNz', 'Authorization: Bearer', 'Authorization: Bearer a b', 'Authorization: cpk_abc']) {
      const answer = await headersOnly(port, announcing('POST', '/api/v1/agents', `${header}\r\n`), sockets);
      expect([header, answer.status, answer.body.code]).toEqual([header, 401, 'unauthorized']);
    }
  });

  it('leaves public routes, preflights and unknown paths as they were', async () => {
    await t.http.get('/health').expect(200);
    await t.http.get('/health/ready').expect(200);
    await t.http.get('/metrics').expect(200);
    await t.http.get('/api/docs-json').expect(200);
    expect((await t.http.get(`/.well-known/oauth-protected-resource/api/v1/agents/${randomUUID()}/mcp`).expect(404)).body.code).toBe('not_found');
    const preflight = await t.http
      .options('/api/v1/agents')
      .set('Origin', ORIGIN)
      .set('Access-Control-Request-Method', 'POST')
      .set('Access-Control-Request-Headers', 'authorization, content-type')
      .expect(204);
    expect(preflight.headers['access-control-allow-origin']).toBe(ORIGIN);
    expect((await t.http.get('/api/v1/no-such-thing').expect(404)).body.code).toBe('not_found');
    // A body sent to no route is answered 404 before it is read (it held the body budget otherwise).
    for (const line of ['POST /api/v1/no-such-thing', 'PATCH /api/v1/orgs', 'POST /health', 'POST /metrics']) {
      const answer = await headersOnly(
        port,
        `${line} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 1000000\r\n\r\n`,
        sockets,
      );
      expect([line, answer.status, answer.body.code]).toEqual([line, 404, 'not_found']);
    }
    // A @PublicRoute() under /api/v1 reads its body like any other.
    expect((await t.http.post('/api/v1/test-public-echo').send({ a: 1 }).expect(201)).body).toEqual({ received: { a: 1 } });
  });

  it('counts each refusal against the address like the guard does: 429 with Retry-After past the limit', async () => {
    Object.assign(t.config.rateLimit, { authFailures: 3 });
    try {
      for (let i = 0; i < 3; i++) expect((await headersOnly(port, announcing('POST', '/api/v1/agents'), sockets)).status).toBe(401);
      const refused = await headersOnly(port, announcing('POST', '/api/v1/agents'), sockets);
      expect([refused.status, refused.body.code]).toEqual([429, 'rate_limited']);
      expect(refused.head).toMatch(/\r\nRetry-After: \d+\r\n/i);
      // A valid key from the same address is still served.
      await t.http
        .get('/api/v1/me')
        .set(...bearer(t.adminToken))
        .expect(200);
    } finally {
      Object.assign(t.config.rateLimit, { authFailures: 0 });
    }
  });
});

describe('a made-up token is refused before its body is read (attack round 15, R-F2)', () => {
  let t: TestApp;
  let port: number;
  const sockets: Socket[] = [];
  beforeAll(async () => {
    t = await createTestApp({ config: { httpTimeouts: { ...DEFAULT_HTTP_TIMEOUTS, headersMs: 2000, requestMs: 3000, idleMs: 10_000 } } });
    await t.app.listen(0, '127.0.0.1');
    port = (t.app.getHttpServer().address() as { port: number }).port;
  }, 180_000);
  afterEach(() => {
    for (const s of sockets.splice(0)) s.destroy();
  });
  afterAll(() => t.close());

  const withToken = (token: string) =>
    `POST /api/v1/agents HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${token}\r\nContent-Type: application/json\r\nContent-Length: 1000000\r\n\r\n`;

  it('answers 401 without waiting for the body (was: the body awaited, then 408)', async () => {
    const started = Date.now();
    const refused = await headersOnly(port, withToken(`cpk_${'x'.repeat(40)}`), sockets);
    expect([refused.status, refused.body.code]).toEqual([401, 'unauthorized']);
    expect(Date.now() - started).toBeLessThan(2500);
  });

  it("refuses a key the route does not allow before its body, counted against the key's own limit (R-F3; was: the body awaited, parsed, then 403)", async () => {
    const org = await createOrg(t);
    const started = Date.now();
    const refused = await headersOnly(port, withToken(org.keys.viewer), sockets);
    expect([refused.status, refused.body.code]).toEqual([403, 'forbidden']);
    expect(Date.now() - started).toBeLessThan(2500);
    Object.assign(t.config.rateLimit, { perKey: 3 });
    try {
      for (let i = 0; i < 3; i++) expect((await headersOnly(port, withToken(org.keys.viewer), sockets)).status).toBe(403);
      expect((await headersOnly(port, withToken(org.keys.viewer), sockets)).status).toBe(429);
      // The organization's limit is not spent by it: its builder's body is read (400: not JSON).
      const builder = await t.http
        .post('/api/v1/agents')
        .set(...bearer(org.keys.builder))
        .set('Content-Type', 'application/json')
        .send('{');
      expect(builder.status).toBe(400);
    } finally {
      Object.assign(t.config.rateLimit, { perKey: 0 });
    }
  });

  it('refuses before the body, on every route that reads one, a key whose role it does not allow (the webhooks: was the body awaited)', async () => {
    const org = await createOrg(t);
    const viewerMay = ['viewer', 'authenticated', 'any-token'];
    const routes = walkRoutes(t).filter((r) => r.body && Array.isArray(r.access) && !r.access.some((a) => viewerMay.includes(a)));
    expect(routes.map((r) => `${r.method} ${r.path}`)).toEqual(expect.arrayContaining(['POST /api/v1/webhooks', 'POST /api/v1/agents']));
    const answers = await Promise.all(
      routes.map(async (r) => {
        const head = `${r.method} ${r.path.replace(/:\w+/g, randomUUID())} HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${org.keys.viewer}\r\nContent-Type: application/json\r\nContent-Length: 1000000\r\n\r\n`;
        return [`${r.method} ${r.path}`, (await headersOnly(port, head, sockets)).status] as const;
      }),
    );
    for (const [route, status] of answers) expect([route, status]).toEqual([route, 403]);
  });

  it('counts a made-up token whose body would not parse as a failed authentication (was: 400 every time, never counted)', async () => {
    Object.assign(t.config.rateLimit, { authFailures: 3 });
    try {
      const notJson = () =>
        t.http.post('/api/v1/agents').set('Authorization', 'Bearer cpk_madeup').set('Content-Type', 'application/json').send('{"name": [1, 2, ');
      for (let i = 0; i < 3; i++) expect((await notJson()).status).toBe(401);
      expect((await notJson()).status).toBe(429);
      // A real key's body is still read, and judged.
      const org = await t.http
        .post('/api/v1/orgs')
        .set(...bearer(t.adminToken))
        .set('Content-Type', 'application/json')
        .send('{');
      expect([org.status, org.body.code]).toEqual([400, 'invalid_request']);
    } finally {
      Object.assign(t.config.rateLimit, { authFailures: 0 });
    }
  });
});

describe('the bytes of bodies being read are bounded per node', () => {
  let t: TestApp;
  let port: number;
  const sockets: Socket[] = [];
  beforeAll(async () => {
    t = await createTestApp({ config: { httpLimits: { ...DEFAULT_HTTP_LIMITS, maxBufferedBodyBytes: BUDGET } } });
    await t.app.listen(0, '127.0.0.1');
    port = (t.app.getHttpServer().address() as { port: number }).port;
  }, 180_000);
  afterAll(async () => {
    for (const s of sockets.splice(0)) s.destroy();
    await t.close();
  });

  /** A valid platform request with a body of about `bytes`: 400 for its unknown property once parsed. */
  const padded = (bytes: number) =>
    t.http
      .post('/api/v1/orgs')
      .set(...bearer(t.adminToken))
      .set('Content-Type', 'application/json')
      .send(JSON.stringify({ slug: 'padded', name: 'Padded', pad: 'x'.repeat(bytes) }));

  it('refuses a body 503 with Retry-After while others hold the budget, and takes it again once they are gone', async () => {
    // Two clients with a token each send most of a large body, and stall.
    const stalled: Socket[] = [];
    for (let i = 0; i < 2; i++) {
      // A real credential: a made-up one is refused before its body (R-F2, above).
      const head = `POST /api/v1/orgs HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${t.adminToken}\r\nContent-Type: application/json\r\nContent-Length: 1000000\r\n\r\n`;
      stalled.push(rawClient(port, head + '{"pad":"' + 'x'.repeat(120 * 1024), sockets).socket);
    }
    const refused = await until(
      () => padded(64 * 1024),
      (res) => res.status === 503,
    );
    expect(refused.body).toMatchObject({ status: 503, code: 'service_unavailable' });
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
    expect(refused.headers.connection).toBe('close');
    // A made-up token is checked before its body is read: it cannot hold the rest.
    const madeUp = await headersOnly(
      port,
      `POST /api/v1/orgs HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer cpk_${'y'.repeat(40)}\r\nContent-Type: application/json\r\nContent-Length: 1000000\r\n\r\n`,
      sockets,
    );
    expect([madeUp.status, madeUp.body.code]).toEqual([401, 'unauthorized']);
    // Bodies without a body's worth of bytes pass meanwhile.
    await t.http
      .get('/api/v1/me')
      .set(...bearer(t.adminToken))
      .expect(200);
    for (const s of stalled) s.destroy();
    await until(
      () => padded(64 * 1024),
      (res) => res.status === 400,
    );
    // What a parsed body took is given back: many in a row, each a quarter of the budget, all pass.
    for (let i = 0; i < 20; i++) expect((await padded(64 * 1024)).status).toBe(400);
  });

  it('is configurable, validated and defaulted', () => {
    const base = { PLATFORM_ADMIN_TOKEN: 'x'.repeat(20), DATABASE_URL: 'postgres://db/x', SECRETS_KEY: Buffer.alloc(32, 7).toString('base64') };
    expect(resolveConfig({ ...base, HTTP_MAX_BUFFERED_BODY_BYTES: '2097152' }).httpLimits).toMatchObject({ maxBufferedBodyBytes: 2097152 });
    expect(parseEnvironment({}).HTTP_MAX_BUFFERED_BODY_BYTES).toBe(64 * 1024 * 1024);
    // Less than one whole body (1 MiB) would refuse a valid request whatever else is going on.
    for (const value of ['1000', '0x100000', 'lots']) expect(() => parseEnvironment({ HTTP_MAX_BUFFERED_BODY_BYTES: value })).toThrow(ConfigError);
  });
});
