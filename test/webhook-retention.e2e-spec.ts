import { DataSource } from 'typeorm';
import { WebhookDeliveriesRepository } from '../src/events/webhook-deliveries.repository';
import { RETENTION_BATCH } from '../src/events/webhook-retention.service';
import { WebhookReceiver } from './support/webhook-receiver';
import { bearer, createOrg, createTestApp, TestApp, TestOrg } from './support/test-app';
import { until } from './support/until';

const HOUR = 3_600_000;

/**
 * API.md "Events, webhooks, browsers": finished deliveries are kept WEBHOOK_DELIVERY_RETENTION_DAYS
 * after they finished, then removed with their attempts by every node's sweep; pending ones stay.
 * Days cannot be waited for: the retention is an hour here and rows are made old in the database.
 */
describe('webhook delivery retention (e2e)', () => {
  let t: TestApp;
  let ds: DataSource;
  let org: TestOrg;
  const receivers: WebhookReceiver[] = [];
  /** What each statement of the sweep removed, in order. */
  const batches: number[] = [];

  beforeAll(async () => {
    t = await createTestApp({
      config: {
        sweepIntervalMs: 200,
        webhookDeliveryRetentionMs: HOUR,
        // A receiver that refuses is tried again in a minute: its deliveries stay pending throughout.
        events: { heartbeatMs: 15_000, pollMs: 500, webhookTimeoutMs: 1_000, webhookRetryBaseMs: 60_000, webhookRetryWindowMs: 86_400_000 },
      },
    });
    ds = t.app.get(DataSource);
    org = await createOrg(t);
    const repo = t.app.get(WebhookDeliveriesRepository);
    const deleteFinished = repo.deleteFinished.bind(repo);
    jest.spyOn(repo, 'deleteFinished').mockImplementation(async (...args) => {
      const n = await deleteFinished(...args);
      if (n > 0) batches.push(n);
      return n;
    });
  }, 180_000);
  afterAll(async () => {
    await Promise.all(receivers.map((r) => r.stop()));
    await t.close();
  });

  const admin = () => bearer(org.keys.admin);

  async function endpoint(answer: number): Promise<string> {
    const receiver = await WebhookReceiver.start();
    receiver.answer = () => answer;
    receivers.push(receiver);
    const res = await t.http
      .post('/api/v1/webhooks')
      .set(...admin())
      .send({ url: receiver.url, types: ['agent.created'] })
      .expect(201);
    receiver.secret = res.body.secret;
    return res.body.id;
  }

  const deliveries = async (id: string) =>
    (
      await t.http
        .get(`/api/v1/webhooks/${id}/deliveries`)
        .set(...admin())
        .expect(200)
    ).body.items as { id: string; status: string; attempts: number }[];

  const stored = async (where: string, params: unknown[]): Promise<number> =>
    (await ds.query(`SELECT count(*)::int AS n FROM webhook_delivery WHERE ${where}`, params))[0].n;

  let delivered: string;
  let refusing: string;
  let keptIds: string[];

  it('removes finished deliveries past the retention, with their attempts, from the table and the list; pending and recent ones stay', async () => {
    delivered = await endpoint(204);
    refusing = await endpoint(503);
    const deleted = await endpoint(503);
    for (let i = 0; i < 3; i++) {
      await t.http
        .post('/api/v1/agents')
        .set(...bearer(org.keys.builder))
        .send({ slug: `kept-${i}`, name: `Kept ${i}` })
        .expect(201);
    }
    const done = await until(
      () => deliveries(delivered),
      (items) => items.length === 3 && items.every((d) => d.status === 'succeeded'),
    );
    await until(
      () => Promise.all([deliveries(refusing), deliveries(deleted)]),
      (lists) => lists.every((items) => items.length === 3 && items.every((d) => d.status === 'pending' && d.attempts >= 1)),
    );
    // Deleting an endpoint fails its pending deliveries: the same retention applies to them.
    await t.http
      .delete(`/api/v1/webhooks/${deleted}`)
      .set(...admin())
      .expect(204);
    expect(await stored(`endpoint_id = $1 AND status = 'failed'`, [deleted])).toBe(3);

    // Two of the delivered ones and all of the deleted endpoint's finished two hours ago; the
    // refused ones are a month old but still pending; the third delivered one finished just now.
    const old = done.slice(1).map((d) => d.id);
    const recent = done[0].id;
    await ds.query(`UPDATE webhook_delivery SET created_at = now() - interval '3 hours', completed_at = now() - interval '2 hours' WHERE id = ANY($1)`, [old]);
    await ds.query(`UPDATE webhook_delivery SET created_at = now() - interval '3 hours', completed_at = now() - interval '2 hours' WHERE endpoint_id = $1`, [
      deleted,
    ]);
    await ds.query(`UPDATE webhook_endpoint SET deleted_at = now() - interval '2 hours' WHERE id = $1`, [deleted]);
    await ds.query(`UPDATE webhook_delivery SET created_at = now() - interval '30 days' WHERE endpoint_id = $1`, [refusing]);

    await until(
      () => stored(`id = ANY($1) OR endpoint_id = $2`, [old, deleted]),
      (n) => n === 0,
    );
    expect(await ds.query(`SELECT delivery_id FROM webhook_attempt WHERE delivery_id = ANY($1)`, [old])).toEqual([]);
    expect((await deliveries(delivered)).map((d) => d.id)).toEqual([recent]);
    const pending = await deliveries(refusing);
    expect(pending.map((d) => d.status)).toEqual(['pending', 'pending', 'pending']);
    keptIds = [recent, ...pending.map((d) => d.id)];
    // The deleted endpoint's row (its sealed secret and URL) goes once its deliveries have.
    await until(
      async () => (await ds.query(`SELECT id FROM webhook_endpoint WHERE id = $1`, [deleted])).length,
      (n) => n === 0,
    );
    // The events themselves stay in the audit log.
    const audit = await t.http
      .get('/api/v1/audit-events?type=agent.created')
      .set(...admin())
      .expect(200);
    expect(audit.body.items).toHaveLength(3);
  });

  it('removes a backlog larger than one statement a batch at a time, to the last row', async () => {
    const backlog = RETENTION_BATCH * 2 + 500;
    batches.length = 0;
    // Finished long ago, each with an attempt (as the dispatcher leaves them); made at once in the
    // database, since the outbox writes them only as events happen.
    await ds.query(
      `WITH made AS (
         INSERT INTO webhook_delivery (id, org_id, endpoint_id, event_seq, status, attempts, next_attempt_at, created_at, completed_at, last_status)
         SELECT gen_random_uuid(), $1, $2, -n, CASE WHEN n % 2 = 0 THEN 'succeeded' ELSE 'failed' END, 1,
                now() - interval '10 days', now() - interval '10 days', now() - interval '9 days' + n * interval '1 second', 204
           FROM generate_series(1, $3::integer) AS n
         RETURNING id, org_id, completed_at
       )
       INSERT INTO webhook_attempt (delivery_id, attempt, org_id, started_at, finished_at, response_status)
       SELECT id, 1, org_id, completed_at, completed_at, 204 FROM made`,
      [org.id, delivered, backlog],
    );
    await until(
      () => stored(`endpoint_id = $1 AND event_seq < 0`, [delivered]),
      (n) => n === 0,
    );
    expect(Math.max(...batches)).toBe(RETENTION_BATCH);
    expect(batches.filter((n) => n === RETENTION_BATCH).length).toBeGreaterThanOrEqual(2);
    expect(batches.reduce((a, b) => a + b, 0)).toBe(backlog);
    expect((await ds.query(`SELECT count(*)::int AS n FROM webhook_attempt WHERE org_id = $1 AND started_at < now() - interval '1 day'`, [org.id]))[0].n).toBe(
      0,
    );
    // What is within the retention, or pending, is still there.
    expect(await stored(`id = ANY($1)`, [keptIds])).toBe(4);
  });

  it('is harmless when several sweeps run at once (as on several nodes)', async () => {
    const repo = t.app.get(WebhookDeliveriesRepository);
    await ds.query(
      `INSERT INTO webhook_delivery (id, org_id, endpoint_id, event_seq, status, attempts, next_attempt_at, created_at, completed_at)
       SELECT gen_random_uuid(), $1, $2, -100000 - n, 'succeeded', 0, now() - interval '10 days', now() - interval '10 days', now() - interval '9 days'
         FROM generate_series(1, 1500) AS n`,
      [org.id, delivered],
    );
    const removed = await Promise.all(Array.from({ length: 4 }, () => repo.deleteFinished(HOUR, 500)));
    expect(removed.every((n) => n >= 0 && n <= 500)).toBe(true);
    await until(
      () => stored(`endpoint_id = $1 AND event_seq < 0`, [delivered]),
      (n) => n === 0,
    );
    expect(await stored(`id = ANY($1)`, [keptIds])).toBe(4);
  });
});
