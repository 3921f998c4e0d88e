import { Client } from 'pg';
import type { Response } from 'supertest';
import { bearer, createOrg, createTestApp, publishAgent, TestApp, TestOrg } from './support/test-app';
import { until } from './support/until';
import { connectionsWaitingOnLock } from './support/lock-waits';

/**
 * Attack round 21, AE-F1: an organization's memories are kept one at a time (its storage bound is
 * weighed under an advisory lock of the organization, after the agent's row lock), and each
 * approved `remember` opened its call's transaction, a pool connection, before waiting for them:
 * 128 approvals of one approver key at once held 9 of the node's 10 connections waiting on the
 * lock, and another organization's `GET /agents` took up to 1.2 s (p50 5 ms). They now wait their
 * turn on the node holding no connection: one of an organization's at a time takes a connection.
 *
 * On a real server only (DATABASE_URL): the test holds the organization's lock from a connection
 * of its own, and the embedded database serves one connection at a time.
 */
const onRealServer = Boolean(process.env.DATABASE_URL);
if (!onRealServer) console.info('memory writes and the pool: runs when DATABASE_URL is set (the embedded database serves one connection at a time)');
const itOnRealServer = onRealServer ? it : it.skip;

describe('approved memory writes and the shared pool (e2e, attack round 21 AE-F1)', () => {
  let t: TestApp;
  let org: TestOrg;
  let other: TestOrg;
  let agents: string[];

  beforeAll(async () => {
    t = await createTestApp();
    org = await createOrg(t, ['memory:read', 'memory:write']);
    other = await createOrg(t);
    const draft = { instructions: 'x', capabilities: [{ id: 'memory-write' }] };
    agents = [await publishAgent(t, org, 'writer-a', draft), await publishAgent(t, org, 'writer-b', draft)];
  }, 120_000);
  afterAll(() => t.close());

  const pending = async (agentId: string, content: string): Promise<string> =>
    (
      await t.http
        .post(`/api/v1/agents/${agentId}/tool-calls`)
        .set(...bearer(org.keys.agent))
        .send({ tool: 'remember', arguments: { content } })
        .expect(202)
    ).body.approvalId as string;

  itOnRealServer(
    'approved remembers wait for the organization’s lock with one connection between them; others are served',
    async () => {
      const approvals: string[] = [];
      for (let i = 0; i < 12; i++) approvals.push(await pending(agents[i % 2], `fact number ${i}`));
      const holder = new Client({ connectionString: t.db.url });
      await holder.connect();
      const waitingOnLock = () => connectionsWaitingOnLock(holder);
      let answers: Promise<Response>[] | undefined;
      try {
        await holder.query(`SELECT pg_advisory_lock(hashtextextended('agent_memory:' || $1::text, 0))`, [org.id]);
        answers = approvals.map((id) =>
          t.http
            .post(`/api/v1/approvals/${id}/approve`)
            .set(...bearer(org.keys.approver))
            .send({})
            .then((r) => r),
        );
        await until(waitingOnLock, (n) => n >= 1);
        // Give the other approvals time to take connections, were they to.
        await new Promise((resolve) => setTimeout(resolve, 1500));
        // One connection waits (on the agent's row or the organization's lock), not one per approval: the pool serves everyone else.
        expect(await waitingOnLock()).toBe(1);
        await t.http
          .get('/api/v1/agents')
          .set(...bearer(other.keys.viewer))
          .expect(200);
        await t.http.get('/health/ready').expect(200);
      } finally {
        await holder.query('SELECT pg_advisory_unlock_all()');
        await holder.end();
      }
      const answered = await Promise.all(answers!);
      expect(answered.map((r) => [r.status, r.body.toolCall?.status])).toEqual(approvals.map(() => [200, 'succeeded']));
      const kept = await t.http
        .get('/api/v1/tool-calls?status=succeeded&limit=50')
        .set(...bearer(org.keys.viewer))
        .expect(200);
      expect(kept.body.items).toHaveLength(12);
    },
    60_000,
  );
});
