import { Client } from 'pg';
import type { Response } from 'supertest';
import { bearer, createOrg, createTestApp, TestApp, TestOrg } from './support/test-app';
import { until } from './support/until';
import { connectionsWaitingOnLock } from './support/lock-waits';

/**
 * Attack round 21, AE-F2 (row 52's class): an organization's keys, skills, collections, webhooks,
 * MCP connections and model providers are counted against their bounds under a lock per
 * organization, and each creation took a pool connection before waiting for it: 100 key creations
 * of one admin key at once held 9 of the node's 10 connections waiting, and another
 * organization's `GET /agents` took up to 1.2 s. They now wait their turn on the node holding no
 * connection.
 *
 * On a real server only (DATABASE_URL): the test holds the organization's lock from a connection
 * of its own, and the embedded database serves one connection at a time.
 */
const onRealServer = Boolean(process.env.DATABASE_URL);
if (!onRealServer) console.info('counted creations and the pool: runs when DATABASE_URL is set (the embedded database serves one connection at a time)');
const itOnRealServer = onRealServer ? it : it.skip;

describe('creations counted under the organization’s lock and the shared pool (e2e, attack round 21 AE-F2)', () => {
  let t: TestApp;
  let org: TestOrg;
  let other: TestOrg;

  beforeAll(async () => {
    t = await createTestApp();
    org = await createOrg(t);
    other = await createOrg(t);
  }, 120_000);
  afterAll(() => t.close());

  const cases: { table: string; create: (i: number) => Promise<Response>; created: number }[] = [
    {
      table: 'api_key',
      create: (i) =>
        t.http
          .post(`/api/v1/orgs/${org.id}/api-keys`)
          .set(...bearer(org.keys.admin))
          .send({ name: `key ${i}`, roles: ['viewer'] })
          .then((r) => r),
      created: 201,
    },
    {
      table: 'skill',
      create: (i) =>
        t.http
          .post('/api/v1/skills')
          .set(...bearer(org.keys.builder))
          .send({ name: `skill-${i}`, description: 'Use when testing.', instructions: 'Do it.' })
          .then((r) => r),
      created: 201,
    },
  ];

  for (const c of cases) {
    itOnRealServer(
      `${c.table}: creations wait for the organization’s lock with one connection between them; others are served`,
      async () => {
        const holder = new Client({ connectionString: t.db.url });
        await holder.connect();
        const waitingOnLock = () => connectionsWaitingOnLock(holder);
        let answers: Promise<Response>[] | undefined;
        try {
          await holder.query(`SELECT pg_advisory_lock(hashtextextended($1 || ':' || $2::text, 0))`, [c.table, org.id]);
          answers = Array.from({ length: 12 }, (_, i) => c.create(i));
          await until(waitingOnLock, (n) => n >= 1);
          // Give the other creations time to take connections, were they to.
          await new Promise((resolve) => setTimeout(resolve, 1500));
          // One connection waits on the lock, not one per creation: the pool serves everyone else.
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
        expect((await Promise.all(answers!)).map((r) => r.status)).toEqual(answers!.map(() => c.created));
      },
      60_000,
    );
  }
});
