import { Client } from 'pg';
import type { Response } from 'supertest';
import { bearer, createOrg, createTestApp, TestApp, TestOrg } from './support/test-app';
import { until } from './support/until';
import { connectionsWaitingOnLock } from './support/lock-waits';

/**
 * Attack round 8, F2: an organization's documents go in one at a time (its storage limit is
 * checked under its lock), and each upload took a pool connection before waiting for that lock:
 * 30 uploads of one builder key at once held 9 of the 10 connections waiting, other
 * organizations' requests took seconds and `/health/ready` failed. Uploads now wait their turn on
 * the node without a connection (at most 16 of an organization waiting; past that `429`).
 *
 * On a real server only (DATABASE_URL): the test holds the organization's lock from a connection
 * of its own, and the embedded database serves one connection at a time.
 */
const onRealServer = Boolean(process.env.DATABASE_URL);
if (!onRealServer) console.info('knowledge uploads and the pool: runs when DATABASE_URL is set (the embedded database serves one connection at a time)');
const itOnRealServer = onRealServer ? it : it.skip;

describe('knowledge uploads and the shared pool (e2e, attack round 8 F2)', () => {
  let t: TestApp;
  let org: TestOrg;
  let other: TestOrg;

  beforeAll(async () => {
    t = await createTestApp();
    org = await createOrg(t);
    other = await createOrg(t);
  }, 120_000);
  afterAll(() => t.close());

  const collection = async (o: TestOrg) =>
    (
      await t.http
        .post('/api/v1/knowledge/collections')
        .set(...bearer(o.keys.builder))
        .send({ name: 'Docs' })
        .expect(201)
    ).body.id as string;
  const addDocument = (o: TestOrg, id: string, content: string): Promise<Response> =>
    t.http
      .post(`/api/v1/knowledge/collections/${id}/documents`)
      .set(...bearer(o.keys.builder))
      .send({ title: 't', content })
      .then((r) => r);

  itOnRealServer('uploads wait for the organization’s lock with one connection between them; past 16 waiting they are 429; others are served', async () => {
    const docs = await collection(org);
    const holder = new Client({ connectionString: t.db.url });
    await holder.connect();
    const waitingOnLock = () => connectionsWaitingOnLock(holder, 'advisory');
    let answers: Promise<Response>[] | undefined;
    try {
      await holder.query(`SELECT pg_advisory_lock(hashtextextended('knowledge_document:' || $1::text, 0))`, [org.id]);
      answers = Array.from({ length: 20 }, (_, i) => addDocument(org, docs, `document ${i}`));
      const settled: Response[] = [];
      for (const a of answers) void a.then((r) => settled.push(r));
      await until(
        async () => settled.length,
        (n) => n >= 3,
      );
      expect(settled.map((r) => r.status)).toEqual([429, 429, 429]);
      expect(settled[0].body).toMatchObject({ code: 'rate_limited', detail: expect.stringContaining('16 documents waiting') });
      expect(settled[0].headers['retry-after']).toBe('1');
      await until(waitingOnLock, (n) => n >= 1);
      // One connection waits on the lock, not one per upload: the pool serves everyone else.
      expect(await waitingOnLock()).toBe(1);
      await t.http
        .get('/api/v1/agents')
        .set(...bearer(other.keys.viewer))
        .expect(200);
      expect((await addDocument(other, await collection(other), 'theirs')).status).toBe(201);
      await t.http.get('/health/ready').expect(200);
    } finally {
      await holder.query('SELECT pg_advisory_unlock_all()');
      await holder.end();
    }
    const statuses = (await Promise.all(answers!)).map((r) => r.status);
    expect(statuses.filter((s) => s === 201)).toHaveLength(17);
    const listed = await t.http
      .get(`/api/v1/knowledge/collections/${docs}/documents?limit=50`)
      .set(...bearer(org.keys.viewer))
      .expect(200);
    expect(listed.body.items).toHaveLength(17);
  });
});
