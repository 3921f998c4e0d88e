import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import request from 'supertest';
import { ServerProcess, startServerProcess, stopServerProcess } from './support/server-process';
import { createTestDatabase, TestDatabase } from './support/test-database';
import { WebhookReceiver } from './support/webhook-receiver';

/**
 * Deliveries are kept in the database, not in a process: the server stops between a failed
 * attempt and its retry, starts again, and every event still arrives, once accepted. On the
 * embedded database (DATA_DIR) and, with DATABASE_URL, on a fresh database of the real server.
 */
describe('webhook deliveries across a restart', () => {
  const dir = mkdtempSync(join(tmpdir(), 'cp-webhooks-'));
  const adminToken = 'cpa_hooks_' + 'z'.repeat(24);
  let db: TestDatabase | undefined;
  let server: ServerProcess | undefined;
  let receiver: WebhookReceiver;
  let env: Record<string, string | undefined>;

  beforeAll(async () => {
    if (process.env.DATABASE_URL) db = await createTestDatabase();
    receiver = await WebhookReceiver.start();
    env = {
      DATA_DIR: join(dir, 'data'),
      DATABASE_URL: db?.url,
      PLATFORM_ADMIN_TOKEN: adminToken,
      SECRETS_KEY: randomBytes(32).toString('base64'),
      EGRESS_ALLOWED_HOSTS: '127.0.0.1',
      // The retry comes well after the server has stopped.
      WEBHOOK_RETRY_BASE_MS: '4000',
      RATE_LIMIT_PER_KEY: '0',
      RATE_LIMIT_PER_ORG: '0',
    };
  });
  afterAll(async () => {
    if (server) await stopServerProcess(server, 'SIGKILL');
    await receiver.stop();
    await db?.drop();
  });

  it('loses nothing: attempts fail, the server stops, starts again, and each event is accepted once', async () => {
    server = await startServerProcess(env);
    const api = () => request(server!.url);
    const as = (token: string) => ['Authorization', `Bearer ${token}`] as [string, string];
    const org = (
      await api()
        .post('/api/v1/orgs')
        .set(...as(adminToken))
        .send({ slug: 'hooks', name: 'Hooks' })
        .expect(201)
    ).body;
    const key = (
      await api()
        .post(`/api/v1/orgs/${org.id}/api-keys`)
        .set(...as(adminToken))
        .send({ name: 'admin', roles: ['admin'] })
        .expect(201)
    ).body.token;
    const hook = (
      await api()
        .post('/api/v1/webhooks')
        .set(...as(key))
        .send({ url: receiver.url, types: ['agent.created'] })
        .expect(201)
    ).body;
    receiver.secret = hook.secret;
    receiver.answer = (_id, nth) => (nth === 1 ? 500 : 204);
    for (let i = 0; i < 3; i++)
      await api()
        .post('/api/v1/agents')
        .set(...as(key))
        .send({ slug: `a-${i}`, name: `A ${i}` })
        .expect(201);

    const deadline = Date.now() + 15_000;
    while (receiver.received.length < 3 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    expect(receiver.received.map((r) => r.answered)).toEqual([500, 500, 500]);
    expect(await stopServerProcess(server)).toBe(0);
    server = undefined;
    expect(receiver.accepted()).toHaveLength(0);

    server = await startServerProcess(env);
    const until = Date.now() + 30_000;
    let items: { status: string; attempts: number }[] = [];
    while (Date.now() < until) {
      items = (
        await api()
          .get(`/api/v1/webhooks/${hook.id}/deliveries`)
          .set(...as(key))
          .expect(200)
      ).body.items;
      if (items.length === 3 && items.every((d) => d.status === 'succeeded')) break;
      await new Promise((r) => setTimeout(r, 200));
    }
    expect(items.map((d) => [d.status, d.attempts])).toEqual([
      ['succeeded', 2],
      ['succeeded', 2],
      ['succeeded', 2],
    ]);
    expect(receiver.received.every((r) => r.valid)).toBe(true);
    expect(receiver.accepted()).toHaveLength(3);
    expect([...receiver.countsById().values()]).toEqual([2, 2, 2]);
  }, 600_000);
});
