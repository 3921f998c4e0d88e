import { mkdtempSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import request from 'supertest';
import { runServer as run, ServerProcess as Server, startServerProcess as start, stopServerProcess as stop } from './support/server-process';

/**
 * The server as `npm start` runs it: its own process, the embedded database in DATA_DIR. These
 * tests own their DATA_DIR and ignore DATABASE_URL on purpose: they prove the embedded default.
 */
describe('the server process on the embedded database', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'cp-data-'));
  let server: Server | undefined;
  afterAll(async () => {
    if (server) await stop(server, 'SIGKILL');
  });

  it('generates the admin token, keeps data across a restart, and stops cleanly on SIGTERM', async () => {
    server = await start({ DATA_DIR: dataDir });
    const tokenFile = join(dataDir, 'admin-token');
    expect(statSync(tokenFile).mode & 0o777).toBe(0o600);
    const token = readFileSync(tokenFile, 'utf8').trim();
    expect(server.output()).toContain(tokenFile);

    await request(server.url).get('/health').expect(200, { status: 'ok' });
    await request(server.url).post('/api/v1/orgs').set('Authorization', `Bearer ${token}`).send({ slug: 'persisted', name: 'P' }).expect(201);

    // SIGTERM while requests are in flight: those the server took finish; none is answered 5xx.
    // (A connection the server had not accepted yet may be refused: that is a retryable network
    // error for the client, not an answer.)
    const url = `${server.url}/api/v1/orgs`;
    const inFlight = Array.from({ length: 20 }, () =>
      fetch(url, { headers: { Authorization: `Bearer ${token}` } }).then(
        (r) => r.status,
        () => 'network',
      ),
    );
    await Promise.race(inFlight);
    const code = await stop(server);
    const statuses = await Promise.all(inFlight);
    expect(code).toBe(0);
    expect(statuses.filter((s) => typeof s === 'number' && s !== 200)).toEqual([]);
    expect(statuses.filter((s) => s === 200).length).toBeGreaterThan(0);

    server = await start({ DATA_DIR: dataDir });
    const orgs = await request(server.url).get('/api/v1/orgs').set('Authorization', `Bearer ${token}`).expect(200);
    expect(orgs.body.items.map((o: { slug: string }) => o.slug)).toEqual(['persisted']);
  });

  it('refuses a second server on the same DATA_DIR, leaving the first one serving', async () => {
    const second = run({ DATA_DIR: dataDir });
    expect(await second.exited).toBe(1);
    expect(second.output()).toMatch(/DATA_DIR .* is in use by another server/);
    await request(server!.url).get('/health/ready').expect(200);
  });

  it('refuses to start on a bad environment, naming the variable', async () => {
    const bad = run({ DATA_DIR: dataDir, PORT: 'eighty' });
    expect(await bad.exited).toBe(1);
    expect(bad.output()).toMatch(/PORT:/);
    const noToken = run({ DATABASE_URL: 'postgres://postgres@127.0.0.1:1/none' });
    expect(await noToken.exited).toBe(1);
    expect(noToken.output()).toMatch(/PLATFORM_ADMIN_TOKEN must be set/);
  });
});
