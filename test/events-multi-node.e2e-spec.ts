import { randomBytes } from 'node:crypto';
import { Client } from 'pg';
import request from 'supertest';
import { ServerProcess, startServerProcess, stopServerProcess } from './support/server-process';
import { SseClient } from './support/sse-client';
import { createTestDatabase, TestDatabase } from './support/test-database';
import { WebhookReceiver } from './support/webhook-receiver';

/**
 * Events across API nodes (two server processes on one PostgreSQL server): a stream on one node
 * sees what the other wrote, resumes on the other node with nothing lost, and the two nodes'
 * webhook dispatchers make each attempt once.
 *
 * Only on a real server (DATABASE_URL): the embedded database is one node by design.
 */
const ENTRY = 'test/support/fixture-server.ts';
const onRealServer = Boolean(process.env.DATABASE_URL);
if (!onRealServer) console.info('events multi-node suite: not run on the embedded database (one node by design); it runs when DATABASE_URL is set');

(onRealServer ? describe : describe.skip)('events on several API nodes', () => {
  const adminToken = 'cpa_evnodes_' + 'q'.repeat(24);
  let db: TestDatabase;
  let nodes: ServerProcess[] = [];
  const clients: SseClient[] = [];
  let receiver: WebhookReceiver;

  beforeAll(async () => {
    db = await createTestDatabase();
    receiver = await WebhookReceiver.start();
    const env = {
      DATABASE_URL: db.url,
      DATABASE_POOL_SIZE: '5',
      PLATFORM_ADMIN_TOKEN: adminToken,
      SECRETS_KEY: randomBytes(32).toString('base64'),
      EGRESS_ALLOWED_HOSTS: '127.0.0.1',
      WEBHOOK_RETRY_BASE_MS: '200',
      RATE_LIMIT_PER_KEY: '0',
      RATE_LIMIT_PER_ORG: '0',
    };
    nodes = await Promise.all([startServerProcess(env, ENTRY), startServerProcess(env, ENTRY)]);
  }, 240_000);
  afterAll(async () => {
    for (const c of clients) c.close();
    await Promise.all(nodes.map((n) => stopServerProcess(n)));
    await receiver.stop();
    await db.drop();
  });

  const node = (i: number) => request(nodes[i % nodes.length].url);
  const as = (token: string) => ['Authorization', `Bearer ${token}`] as [string, string];
  let org: { id: string };
  const keys: Record<string, string> = {};
  let agentId: string;

  beforeAll(async () => {
    org = (
      await node(0)
        .post('/api/v1/orgs')
        .set(...as(adminToken))
        .send({ slug: 'ev-nodes', name: 'Event nodes' })
        .expect(201)
    ).body;
    for (const role of ['builder', 'agent', 'approver', 'admin']) {
      keys[role] = (
        await node(1)
          .post(`/api/v1/orgs/${org.id}/api-keys`)
          .set(...as(adminToken))
          .send({ name: role, roles: [role] })
          .expect(201)
      ).body.token;
    }
    agentId = (
      await node(0)
        .post('/api/v1/agents')
        .set(...as(keys.builder))
        .send({ slug: 'approvals', name: 'Approvals' })
        .expect(201)
    ).body.id;
    await node(1)
      .put(`/api/v1/agents/${agentId}/draft`)
      .set(...as(keys.builder))
      .send({ instructions: 'x', capabilities: [{ id: 'fx-crash' }] })
      .expect(200);
    await node(0)
      .post(`/api/v1/agents/${agentId}/publish`)
      .set(...as(keys.builder))
      .expect(201);
  }, 60_000);

  async function stream(i: number, headers: Record<string, string> = {}): Promise<SseClient> {
    const c = await SseClient.open(`${nodes[i].url}/api/v1/events?types=approval.requested,agent.created`, {
      authorization: `Bearer ${keys.approver}`,
      ...headers,
    });
    clients.push(c);
    await c.waitFor((x) => x.lastId !== undefined);
    return c;
  }

  it('a stream on one node sees an approval requested through the other, woken by NOTIFY rather than the poll', async () => {
    const c = await stream(0);
    const started = Date.now();
    const call = (
      await node(1)
        .post(`/api/v1/agents/${agentId}/tool-calls`)
        .set(...as(keys.agent))
        .send({ tool: 'fx_crash_effect', arguments: { tag: 'sse', ms: 0 } })
        .expect(202)
    ).body;
    await c.waitFor((x) => x.events.some((e) => e.event.type === 'approval.requested'));
    // The poll comes every 5 s; the wake-up from the other node's NOTIFY is much sooner.
    expect(Date.now() - started).toBeLessThan(3_000);
    expect(c.events.find((e) => e.event.type === 'approval.requested')!.event.target).toEqual({ type: 'approval', id: call.approvalId });
  });

  it('resumes on the other node after a disconnect with exactly the missed events', async () => {
    const c = await stream(0);
    await node(1)
      .post('/api/v1/agents')
      .set(...as(keys.builder))
      .send({ slug: 'seen', name: 'Seen' })
      .expect(201);
    await c.waitFor((x) => x.events.length >= 1);
    const last = c.lastId!;
    c.close();
    const missed: string[] = [];
    for (let i = 0; i < 6; i++) {
      missed.push(
        (
          await node(i)
            .post('/api/v1/agents')
            .set(...as(keys.builder))
            .send({ slug: `missed-${i}`, name: `Missed ${i}` })
            .expect(201)
        ).body.id,
      );
    }
    const resumed = await stream(1, { 'last-event-id': last });
    await resumed.waitFor((x) => x.events.length >= missed.length);
    await new Promise((r) => setTimeout(r, 500));
    expect(resumed.events.map((e) => e.event.target)).toEqual(missed.map((id) => ({ type: 'agent', id })));
  });

  it("ends a key's stream on one node when the key is revoked through the other, and sends it nothing written after", async () => {
    const key = (
      await node(0)
        .post(`/api/v1/orgs/${org.id}/api-keys`)
        .set(...as(keys.admin))
        .send({ name: 'revoked through node 0', roles: ['approver'] })
        .expect(201)
    ).body as { id: string; token: string };
    const c = await SseClient.open(`${nodes[1].url}/api/v1/events`, { authorization: `Bearer ${key.token}` });
    clients.push(c);
    let ended = false;
    c.response.on('end', () => (ended = true));
    await c.waitFor((x) => x.lastId !== undefined);
    await node(0)
      .delete(`/api/v1/orgs/${org.id}/api-keys/${key.id}`)
      .set(...as(keys.admin))
      .expect(204);
    await node(0)
      .post('/api/v1/agents')
      .set(...as(keys.builder))
      .send({ slug: 'after-revocation', name: 'After revocation' })
      .expect(201);
    // Node 1's stream reads when woken by the revocation's NOTIFY, and finds the key revoked: before,
    // it sent the agent's creation and ended at the next heartbeat (15 s).
    await c.waitFor(() => ended || c.events.length > 0);
    expect(c.events).toEqual([]);
    expect(ended).toBe(true);
  });

  it('two nodes make each delivery attempt once', async () => {
    const hook = (
      await node(0)
        .post('/api/v1/webhooks')
        .set(...as(keys.admin))
        .send({ url: receiver.url, types: ['agent.created'] })
        .expect(201)
    ).body;
    receiver.secret = hook.secret;
    // Each event: two failed attempts, then accepted.
    receiver.answer = (_id, nth) => (nth <= 2 ? 502 : 200);
    const count = 20;
    await Promise.all(
      Array.from({ length: count }, (_, i) =>
        node(i)
          .post('/api/v1/agents')
          .set(...as(keys.builder))
          .send({ slug: `many-${i}`, name: `Many ${i}` })
          .expect(201),
      ),
    );
    const deadline = Date.now() + 60_000;
    while (receiver.accepted().length < count && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    await new Promise((r) => setTimeout(r, 1_000));
    expect(receiver.received.every((r) => r.valid)).toBe(true);
    expect(receiver.accepted()).toHaveLength(count);
    expect([...receiver.countsById().values()]).toEqual(Array(count).fill(3));
    const pg = new Client({ connectionString: db.url });
    await pg.connect();
    try {
      const rows: { attempts: number; logged: number; status: string }[] = await pg
        .query(
          `SELECT d.attempts, d.status, (SELECT count(*)::int FROM webhook_attempt a WHERE a.delivery_id = d.id) AS logged FROM webhook_delivery d WHERE d.endpoint_id = $1`,
          [hook.id],
        )
        .then((r) => r.rows);
      expect(rows).toHaveLength(count);
      expect(rows.every((r) => r.attempts === 3 && r.logged === 3 && r.status === 'succeeded')).toBe(true);
    } finally {
      await pg.end();
    }
  }, 120_000);
});
