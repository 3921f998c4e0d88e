import { Socket } from 'node:net';
import { BODY_GRACE_MS } from '../../src/common/connections';
import { DEFAULT_HTTP_LIMITS, DEFAULT_HTTP_TIMEOUTS } from '../../src/config/http-config';
import { TestIdentityProvider } from '../support/oidc-provider';
import { rawClient } from '../support/raw-http';
import { bearer, createOrg, createTestApp, TestApp, TestOrg } from '../support/test-app';
import { until } from '../support/until';

/**
 * Bodies read under pressure. A made-up token with a body sent a byte a second held a connection
 * for the whole request timeout: 2,000 of them filled the connection cap and every other client
 * was refused, with no credential at all. And a real key within its rate limit could fill the
 * body budget alone. Past half the cap (or half the budget) a credential is checked before its
 * body, a refused connection closes bodies read unchecked too long, and one organization reads at
 * most its share of the bodies and bytes.
 */
jest.setTimeout(120_000);

/** Sends `head` and the start of a body on a connection of its own, and leaves it open. */
const client = (port: number, head: string, sockets: Socket[], start = '') => rawClient(port, head + start, sockets);

const posting = (token: string, length: number, path = '/api/v1/agents') =>
  `POST ${path} HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${token}\r\nContent-Type: application/json\r\nContent-Length: ${length}\r\nConnection: close\r\n\r\n`;

/** A body of exactly `length` bytes, to be sent after `start`. */
const rest = (start: string, length: number) => '"' + 'x'.repeat(length - start.length - 3) + '"}';

describe('bodies under connection pressure', () => {
  const CAP = 8;
  let t: TestApp;
  let port: number;
  let first: TestOrg;
  let second: TestOrg;
  const sockets: Socket[] = [];
  let idp: TestIdentityProvider;
  beforeAll(async () => {
    idp = await TestIdentityProvider.start();
    // A long keep-alive and request timeout, so only what is under test closes a connection.
    t = await createTestApp({
      config: {
        httpTimeouts: { ...DEFAULT_HTTP_TIMEOUTS, keepAliveMs: 60_000, requestMs: 60_000 },
        httpLimits: { ...DEFAULT_HTTP_LIMITS, maxConnections: CAP },
        oidc: {
          issuer: idp.issuer,
          audience: idp.audience,
          orgClaim: 'org_id',
          rolesClaim: 'roles',
          clockSkewSeconds: 60,
          keyRefreshCooldownMs: 30_000,
          keysMaxAgeMs: 600_000,
        },
      },
    });
    first = await createOrg(t);
    second = await createOrg(t);
    await t.app.listen(0, '127.0.0.1');
    port = (t.app.getHttpServer().address() as { port: number }).port;
  }, 180_000);
  afterEach(() => {
    for (const s of sockets.splice(0)) s.destroy();
  });
  afterAll(async () => {
    await t.close();
    await idp.close();
  });

  const madeUp = (i: number) => `cpk_${String(i).padStart(40, 'm')}`;

  it('a made-up token is refused before its slow body; bodies read too long make room when the cap is full', async () => {
    // Half the cap: bodies that never end (a made-up token's is never read: attack round 15, R-F2).
    const slow = Array.from({ length: CAP / 2 }, () => client(port, posting(second.keys.builder, 1000), sockets, '{'));
    await new Promise((resolve) => setTimeout(resolve, 300));
    // One more: refused at once, before its body (the code before this read it for the request timeout).
    const refused = await client(port, posting(madeUp(99), 1000), sockets, '{').answer;
    expect([refused.status, refused.body.code]).toEqual([401, 'unauthorized']);
    // A real key's body is read meanwhile.
    const served = await t.http
      .post('/api/v1/agents')
      .set(...bearer(first.keys.builder))
      .send({ slug: 'under-pressure', name: 'Under pressure' })
      .expect(201);
    expect(served.body.slug).toBe('under-pressure');
    // The cap fills (here with idle connections); the refused connection closes the unchecked slow bodies...
    await new Promise((resolve) => setTimeout(resolve, BODY_GRACE_MS));
    for (let i = 0; i <= CAP; i++) client(port, 'GET /health HTTP/1.1\r\nHost: x\r\n\r\n', sockets);
    const closed = await Promise.all(slow.map((s) => s.answer));
    expect(closed.map((a) => a.status)).toEqual(slow.map(() => 0));
    // ...and the next client is served.
    await until(
      () => t.http.get('/health'),
      (res) => res.status === 200,
    );
  });

  it('under pressure, one organization reads at most its share of bodies at once, and the others go on', async () => {
    // Idle connections put the node past half its cap.
    for (let i = 0; i <= CAP / 2; i++) client(port, 'GET /health HTTP/1.1\r\nHost: x\r\n\r\n', sockets);
    await new Promise((resolve) => setTimeout(resolve, 300));
    const body = '{"slug":"share-1","name":"Share","pad":';
    // The first organization's share (one body, at a cap of eight) is taken by a slow body...
    const slow = client(port, posting(first.keys.builder, 2000), sockets, body);
    await new Promise((resolve) => setTimeout(resolve, 300));
    // ...so its next body is refused 503 before it is read,
    const over = await client(port, posting(first.keys.builder, 2000), sockets, body).answer;
    expect([over.status, over.body.code]).toEqual([503, 'service_unavailable']);
    expect(over.head).toMatch(/\r\nRetry-After: 1\r\n/i);
    // while the second organization's is read (400: `pad` is not a field of an agent).
    const other = client(port, posting(second.keys.builder, 2000), sockets, body);
    other.socket.write(rest(body, 2000));
    expect((await other.answer).status).toBe(400);
    // The share is given back once the slow body is read.
    slow.socket.write(rest(body, 2000));
    expect((await slow.answer).status).toBe(400);
    const again = client(port, posting(first.keys.builder, 2000), sockets, body);
    again.socket.write(rest(body, 2000));
    expect((await again.answer).status).toBe(400);
  });

  it("under pressure, a person who may do nothing (no role, or a token scoped away from REST) is refused before the body, holding none of the organization's share", async () => {
    for (let i = 0; i <= CAP / 2; i++) client(port, 'GET /health HTTP/1.1\r\nHost: x\r\n\r\n', sockets);
    await new Promise((resolve) => setTimeout(resolve, 300));
    const body = '{"slug":"share-2","name":"Share","pad":';
    for (const claims of [{ roles: [] }, { roles: ['builder'], scope: 'mcp:tools' }]) {
      const token = await idp.token({ claims: { org_id: first.id, ...claims } });
      const refused = await client(port, posting(token, 2000), sockets, body).answer;
      expect([refused.status, refused.body.code]).toEqual([403, 'roles' in claims && claims.roles.length === 0 ? 'forbidden' : 'insufficient_scope']);
    }
    // The organization's one share of bodies is still its keys': this body is read (400: `pad`).
    const served = client(port, posting(first.keys.builder, 2000), sockets, body);
    served.socket.write(rest(body, 2000));
    expect((await served.answer).status).toBe(400);
  });
});

describe('bytes of bodies under pressure', () => {
  const BUDGET = 1024 * 1024;
  let t: TestApp;
  let port: number;
  let first: TestOrg;
  let second: TestOrg;
  let third: TestOrg;
  const sockets: Socket[] = [];
  beforeAll(async () => {
    t = await createTestApp({ config: { httpLimits: { ...DEFAULT_HTTP_LIMITS, maxBufferedBodyBytes: BUDGET } } });
    first = await createOrg(t);
    second = await createOrg(t);
    third = await createOrg(t);
    await t.app.listen(0, '127.0.0.1');
    port = (t.app.getHttpServer().address() as { port: number }).port;
  }, 180_000);
  afterAll(async () => {
    for (const s of sockets.splice(0)) s.destroy();
    await t.close();
  });

  it('one organization holds at most its share of them once half the budget is held', async () => {
    // Two stalled bodies of a third organization (a made-up token's body is never read) hold more than half the budget.
    for (let i = 0; i < 2; i++) client(port, posting(third.keys.builder, 1_000_000), sockets, '{"pad":"' + 'x'.repeat(300 * 1024));
    const big = (org: TestOrg, bytes: number) =>
      t.http
        .post('/api/v1/agents')
        .set(...bearer(org.keys.builder))
        .set('Content-Type', 'application/json')
        .send(JSON.stringify({ slug: 'bytes', name: 'Bytes', pad: 'x'.repeat(bytes) }));
    // Room remains for 200 KiB, but not in one organization's share (an eighth: 128 KiB).
    const refused = await until(
      () => big(first, 200 * 1024),
      (res) => res.status === 503,
    );
    expect(refused.body).toMatchObject({ status: 503, code: 'service_unavailable' });
    // Within its share, the same organization's body is read, and so is another's.
    expect((await big(first, 64 * 1024)).status).toBe(400);
    expect((await big(second, 100 * 1024)).status).toBe(400);
  });
});
