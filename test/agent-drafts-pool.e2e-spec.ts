import { Client } from 'pg';
import type { Response } from 'supertest';
import { bearer, createOrg, createTestApp, TestApp, TestOrg } from './support/test-app';
import { until } from './support/until';
import { connectionsWaitingOnLock } from './support/lock-waits';

/**
 * Attack round 21, AE-F3 (row 52's class): saving an agent's draft locks the agent's row and, by
 * trigger, the organization's `agent_usage` row, and each save took a pool connection before
 * waiting for them: 100 saves of one builder key at once held 9 of the node's 10 connections
 * waiting, and another organization's `GET /agents` took up to 536 ms. They now wait their turn
 * on the node holding no connection.
 *
 * On a real server only (DATABASE_URL): the test holds the agent's row from a connection of its
 * own, and the embedded database serves one connection at a time.
 */
const onRealServer = Boolean(process.env.DATABASE_URL);
if (!onRealServer) console.info('draft saves and the pool: runs when DATABASE_URL is set (the embedded database serves one connection at a time)');
const itOnRealServer = onRealServer ? it : it.skip;

describe('draft saves and the shared pool (e2e, attack round 21 AE-F3)', () => {
  let t: TestApp;
  let org: TestOrg;
  let other: TestOrg;

  beforeAll(async () => {
    t = await createTestApp();
    org = await createOrg(t);
    other = await createOrg(t);
  }, 120_000);
  afterAll(() => t.close());

  itOnRealServer(
    'saves wait for the agent’s row with one connection between them; others are served',
    async () => {
      const agent = (
        await t.http
          .post('/api/v1/agents')
          .set(...bearer(org.keys.builder))
          .send({ slug: 'drafted', name: 'Drafted' })
          .expect(201)
      ).body.id as string;
      const holder = new Client({ connectionString: t.db.url });
      await holder.connect();
      const waitingOnLock = () => connectionsWaitingOnLock(holder);
      let answers: Promise<Response>[] | undefined;
      try {
        await holder.query('BEGIN');
        await holder.query('SELECT 1 FROM agent WHERE org_id = $1 AND id = $2 FOR UPDATE', [org.id, agent]);
        answers = Array.from({ length: 12 }, (_, i) =>
          t.http
            .put(`/api/v1/agents/${agent}/draft`)
            .set(...bearer(org.keys.builder))
            .send({ instructions: `Draft ${i}.`, capabilities: [] })
            .then((r) => r),
        );
        const settled: Response[] = [];
        for (const a of answers) void a.then((r) => settled.push(r));
        await until(
          async () => [await waitingOnLock(), settled.map((r) => `${r.status} ${JSON.stringify(r.body).slice(0, 200)}`)] as const,
          ([n]) => n >= 1,
          60_000,
        );
        // Give the other saves time to take connections, were they to.
        await new Promise((resolve) => setTimeout(resolve, 1500));
        // One connection waits on the lock, not one per save: the pool serves everyone else.
        expect(await waitingOnLock()).toBe(1);
        await t.http
          .get('/api/v1/agents')
          .set(...bearer(other.keys.viewer))
          .expect(200);
        await t.http.get('/health/ready').expect(200);
      } finally {
        await holder.query('ROLLBACK');
        await holder.end();
      }
      expect((await Promise.all(answers!)).map((r) => r.status)).toEqual(answers!.map(() => 200));
    },
    120_000,
  );
});
