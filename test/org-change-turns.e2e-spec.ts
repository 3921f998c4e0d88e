import { Client } from 'pg';
import type { Response } from 'supertest';
import { bearer, createOrg, createTestApp, TestApp, TestOrg } from './support/test-app';
import { until } from './support/until';
import { connectionsWaitingOnLock } from './support/lock-waits';

/**
 * Attack round 21, AE-N1 (row 52's class): publishes of one agent (its row), tool switches and
 * retirements of one organization (its switches' lock) and its API key policy (its row) each took
 * a pool connection before waiting for a lock held to the end of another's transaction: 60
 * publishes of one agent at once moved another organization's `GET /agents` to 354 ms, 100
 * switches to 385 ms, 100 policies to 376 ms. They now wait their turn on the node holding no
 * connection.
 *
 * On a real server only (DATABASE_URL): the test holds the lock from a connection of its own, and
 * the embedded database serves one connection at a time.
 */
const onRealServer = Boolean(process.env.DATABASE_URL);
if (!onRealServer)
  console.info('changes waiting on a lock and the pool: runs when DATABASE_URL is set (the embedded database serves one connection at a time)');
const itOnRealServer = onRealServer ? it : it.skip;

describe('changes that serialize on a lock, and the shared pool (e2e, attack round 21 AE-N1)', () => {
  let t: TestApp;
  let org: TestOrg;
  let other: TestOrg;

  beforeAll(async () => {
    t = await createTestApp();
    org = await createOrg(t);
    other = await createOrg(t);
  }, 120_000);
  afterAll(() => t.close());

  /** `hold` takes the lock from the test's own connection; twelve changes wait for it; one connection of the pool waits, not one per change. */
  const oneWaits = async (hold: (holder: Client) => Promise<void>, change: (i: number) => Promise<Response>): Promise<number[]> => {
    const holder = new Client({ connectionString: t.db.url });
    await holder.connect();
    const waitingOnLock = () => connectionsWaitingOnLock(holder);
    let answers: Promise<Response>[] | undefined;
    try {
      await holder.query('BEGIN');
      await hold(holder);
      answers = Array.from({ length: 12 }, (_, i) => change(i));
      await until(waitingOnLock, (n) => n >= 1, 60_000);
      // Give the other changes time to take connections, were they to.
      await new Promise((resolve) => setTimeout(resolve, 1500));
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
    return (await Promise.all(answers!)).map((r) => r.status);
  };

  itOnRealServer(
    'publishes of one agent',
    async () => {
      const agent = (
        await t.http
          .post('/api/v1/agents')
          .set(...bearer(org.keys.builder))
          .send({ slug: 'published', name: 'Published' })
          .expect(201)
      ).body.id as string;
      await t.http
        .put(`/api/v1/agents/${agent}/draft`)
        .set(...bearer(org.keys.builder))
        .send({ instructions: 'Publish me.', capabilities: [] })
        .expect(200);
      const statuses = await oneWaits(
        async (holder) => void (await holder.query('SELECT 1 FROM agent WHERE org_id = $1 AND id = $2 FOR UPDATE', [org.id, agent])),
        () =>
          t.http
            .post(`/api/v1/agents/${agent}/publish`)
            .set(...bearer(org.keys.builder))
            .then((r) => r),
      );
      // One made the version; the others found it made, nothing changed.
      expect(statuses.filter((s) => s === 201)).toHaveLength(1);
      expect(statuses.filter((s) => s === 200)).toHaveLength(11);
    },
    120_000,
  );

  itOnRealServer(
    'tool switches of one organization',
    async () => {
      const statuses = await oneWaits(
        async (holder) => void (await holder.query(`SELECT pg_advisory_xact_lock(hashtextextended('governance:' || $1::text, 0))`, [org.id])),
        (i) =>
          t.http
            .put('/api/v1/tools/knowledge/search_knowledge/disabled')
            .set(...bearer(org.keys.admin))
            .send({ disabled: i % 2 === 0, reason: `switch ${i}` })
            .then((r) => r),
      );
      expect(statuses).toEqual(statuses.map(() => 200));
    },
    120_000,
  );

  itOnRealServer(
    'API key policies of one organization',
    async () => {
      const statuses = await oneWaits(
        async (holder) => void (await holder.query('SELECT 1 FROM org WHERE id = $1 FOR UPDATE', [org.id])),
        (i) =>
          t.http
            .put(`/api/v1/orgs/${org.id}/api-key-policy`)
            .set(...bearer(org.keys.admin))
            .send({ maxLifetimeDays: 30 + i })
            .then((r) => r),
      );
      expect(statuses).toEqual(statuses.map(() => 200));
    },
    120_000,
  );
});
