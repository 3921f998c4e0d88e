import { Socket } from 'node:net';
import { ConfigError, parseEnvironment } from '../../src/config/app-config';
import { DEFAULT_HTTP_LIMITS, DEFAULT_HTTP_TIMEOUTS, heldRequestLimits } from '../../src/config/http-config';
import { resolveConfig } from '../../src/config/resolve-config';
import { HEAD_GRACE_MS } from '../../src/common/connections';
import { rawClient, RawClient } from '../support/raw-http';
import { createTestApp, TestApp } from '../support/test-app';
import { until } from '../support/until';

/**
 * Connections one client can hold. There was no cap, and an idle keep-alive connection was kept
 * 72 s (Fastify's default, meant for a load balancer in front): one anonymous client opened 20,000
 * of them with one `GET /health` each, filled the node's file descriptors, and every other client
 * (health checks and the database pool's new connections too) was refused for as long as it kept
 * that up. Connections are now capped (HTTP_MAX_CONNECTIONS), an idle one is kept 5 s
 * (HTTP_KEEP_ALIVE_TIMEOUT_MS), and when the cap refuses a connection the idle ones make room.
 */
jest.setTimeout(120_000);

/** A connection of its own that sends one `GET /health` and then stays open, idle. */
const idleClient = (port: number, sockets: Socket[]) => rawClient(port, 'GET /health HTTP/1.1\r\nHost: localhost\r\n\r\n', sockets);

const answered = (c: RawClient) => /^HTTP\/1\.1 200 [\s\S]*\r\n\r\n\{"status":"ok"\}/.test(c.received());

describe('idle keep-alive connections', () => {
  let t: TestApp;
  let port: number;
  const sockets: Socket[] = [];
  beforeAll(async () => {
    t = await createTestApp();
    await t.app.listen(0, '127.0.0.1');
    port = (t.app.getHttpServer().address() as { port: number }).port;
  }, 180_000);
  afterAll(async () => {
    for (const s of sockets.splice(0)) s.destroy();
    await t.close();
  });

  it('are kept 5 s by default, and the server closes them itself', async () => {
    const client = idleClient(port, sockets);
    await until(
      async () => client.received(),
      (text) => text.includes('{"status":"ok"}'),
    );
    expect(client.received()).toMatch(/\r\nKeep-Alive: timeout=5\r\n/i);
    // Closed by the server (the client never ends it); it had stayed 72 s.
    await client.answer;
    expect(client.socket.destroyed).toBe(true);
  });

  it('count against a cap of connections, by default well under a usual file-descriptor limit', () => {
    expect(t.app.getHttpServer().maxConnections).toBe(DEFAULT_HTTP_LIMITS.maxConnections);
    expect(DEFAULT_HTTP_LIMITS.maxConnections).toBeLessThanOrEqual(4096);
  });
});

describe('the connection cap', () => {
  const CAP = 4;
  let t: TestApp;
  let port: number;
  const sockets: Socket[] = [];
  beforeAll(async () => {
    // A long keep-alive, so only the cap can free the idle connections below.
    t = await createTestApp({
      config: { httpTimeouts: { ...DEFAULT_HTTP_TIMEOUTS, keepAliveMs: 60_000 }, httpLimits: { ...DEFAULT_HTTP_LIMITS, maxConnections: CAP } },
    });
    await t.app.listen(0, '127.0.0.1');
    port = (t.app.getHttpServer().address() as { port: number }).port;
  }, 180_000);
  afterAll(async () => {
    for (const s of sockets.splice(0)) s.destroy();
    await t.close();
  });

  it('refuses a connection past it, and the idle ones then make room for the next client', async () => {
    const holders = Array.from({ length: CAP }, () => idleClient(port, sockets));
    await until(
      async () => holders.filter(answered).length,
      (n) => n === CAP,
    );
    // One more: closed unanswered (the code before this answered it, and the next 20,000).
    const refused = idleClient(port, sockets);
    await refused.answer;
    expect(refused.received()).toBe('');
    // The refusal closed the idle connections, which had nothing in flight...
    await Promise.all(holders.map((h) => h.answer));
    // ...and the next client is served.
    const next = idleClient(port, sockets);
    await until(
      async () => answered(next),
      (ok) => ok,
    );
  });
});

describe('connections still sending a request head', () => {
  const CAP = 4;
  let t: TestApp;
  let port: number;
  const sockets: Socket[] = [];
  beforeAll(async () => {
    t = await createTestApp({ config: { httpLimits: { ...DEFAULT_HTTP_LIMITS, maxConnections: CAP } } });
    await t.app.listen(0, '127.0.0.1');
    port = (t.app.getHttpServer().address() as { port: number }).port;
  }, 180_000);
  afterAll(async () => {
    for (const s of sockets.splice(0)) s.destroy();
    await t.close();
  });

  it('past HEAD_GRACE_MS, are closed when the cap refuses a connection, and the next client is served', async () => {
    const halfHeads = Array.from({ length: CAP }, () => rawClient(port, 'GET /health HTTP/1.1\r\nHost: x\r\n', sockets));
    await new Promise((resolve) => setTimeout(resolve, HEAD_GRACE_MS + 200));
    // Refused (the cap is full of half heads), which closes them...
    const refused = idleClient(port, sockets);
    await refused.answer;
    await Promise.all(halfHeads.map((h) => h.answer));
    // ...and the next client is served.
    const next = idleClient(port, sockets);
    await until(
      async () => answered(next),
      (ok) => ok,
    );
  });
});

describe('configuration', () => {
  it('HTTP_MAX_CONNECTIONS, HTTP_HELD_REQUESTS_* and HTTP_KEEP_ALIVE_TIMEOUT_MS are read, validated and defaulted', () => {
    const base = { PLATFORM_ADMIN_TOKEN: 'x'.repeat(20), DATABASE_URL: 'postgres://db/x', SECRETS_KEY: Buffer.alloc(32, 7).toString('base64') };
    const config = resolveConfig({ ...base, HTTP_MAX_CONNECTIONS: '500', HTTP_KEEP_ALIVE_TIMEOUT_MS: '65000' });
    expect(config.httpLimits?.maxConnections).toBe(500);
    expect(heldRequestLimits(config.httpLimits!)).toEqual({ max: 375, perOrg: 93 });
    const held = resolveConfig({ ...base, HTTP_HELD_REQUESTS_MAX: '1200', HTTP_HELD_REQUESTS_PER_ORG: '600' });
    expect(heldRequestLimits(held.httpLimits!)).toEqual({ max: 1200, perOrg: 600 });
    expect(heldRequestLimits(resolveConfig({ ...base, HTTP_HELD_REQUESTS_MAX: '', HTTP_HELD_REQUESTS_PER_ORG: '' }).httpLimits!)).toEqual({
      max: 1500,
      perOrg: 375,
    });
    expect(config.httpTimeouts?.keepAliveMs).toBe(65_000);
    const defaults = parseEnvironment({});
    expect([defaults.HTTP_MAX_CONNECTIONS, defaults.HTTP_KEEP_ALIVE_TIMEOUT_MS]).toEqual([DEFAULT_HTTP_LIMITS.maxConnections, 5000]);
    expect(DEFAULT_HTTP_TIMEOUTS.keepAliveMs).toBe(5000);
    for (const [name, value] of [
      ['HTTP_MAX_CONNECTIONS', '0'],
      ['HTTP_MAX_CONNECTIONS', 'many'],
      ['HTTP_KEEP_ALIVE_TIMEOUT_MS', '10'],
      ['HTTP_KEEP_ALIVE_TIMEOUT_MS', '5s'],
      ['HTTP_HELD_REQUESTS_MAX', '0'],
      ['HTTP_HELD_REQUESTS_PER_ORG', '1.5'],
    ]) {
      expect(() => parseEnvironment({ [name]: value })).toThrow(ConfigError);
      expect(() => parseEnvironment({ [name]: value })).toThrow(name);
    }
  });
});
