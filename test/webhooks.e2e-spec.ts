import { DataSource } from 'typeorm';
import { WebhookReceiver } from './support/webhook-receiver';
import { metricSample, scrapeMetrics } from './support/metrics';
import { bearer, createOrg, createTestApp, TestApp, TestOrg } from './support/test-app';
import { until } from './support/until';

/** API.md "Events, webhooks, browsers": webhook endpoints and their deliveries, on either database. */
describe('webhooks (e2e)', () => {
  let t: TestApp;
  let ds: DataSource;
  let org: TestOrg;
  let other: TestOrg;
  const receivers: WebhookReceiver[] = [];

  beforeAll(async () => {
    t = await createTestApp({
      config: { events: { heartbeatMs: 15_000, pollMs: 500, webhookTimeoutMs: 1_000, webhookRetryBaseMs: 100, webhookRetryWindowMs: 60_000 } },
    });
    ds = t.app.get(DataSource);
    org = await createOrg(t);
    other = await createOrg(t);
    // The embedded database starts slowly on a loaded machine.
  }, 180_000);
  afterAll(async () => {
    await Promise.all(receivers.map((r) => r.stop()));
    await t.close();
  });

  const admin = (o: TestOrg = org) => bearer(o.keys.admin);
  let n = 0;
  const createAgent = async (o: TestOrg = org) =>
    (
      await t.http
        .post('/api/v1/agents')
        .set(...bearer(o.keys.builder))
        .send({ slug: `wh-${++n}`, name: `Webhooks ${n}` })
        .expect(201)
    ).body.id as string;

  async function endpoint(types: string[], o: TestOrg = org): Promise<{ id: string; receiver: WebhookReceiver }> {
    const receiver = await WebhookReceiver.start();
    receivers.push(receiver);
    const res = await t.http
      .post('/api/v1/webhooks')
      .set(...admin(o))
      .send({ url: receiver.url, types })
      .expect(201);
    receiver.secret = res.body.secret;
    return { id: res.body.id, receiver };
  }

  async function deliveries(id: string, o: TestOrg = org, query = '') {
    return (
      await t.http
        .get(`/api/v1/webhooks/${id}/deliveries${query}`)
        .set(...admin(o))
        .expect(200)
    ).body.items as {
      id: string;
      eventId: string;
      type: string;
      status: string;
      attempts: number;
      lastStatus: number | null;
      nextAttemptAt: string | null;
      history: { attempt: number; status: number | null; error: string | null; finishedAt: string | null }[];
    }[];
  }

  it('201 shows the signing secret once; reads never show it; the audit log has webhook.created', async () => {
    const res = await t.http
      .post('/api/v1/webhooks')
      .set(...admin())
      .send({ url: 'http://127.0.0.1:9/x#frag', types: ['agent.created'], description: 'CI' })
      .expect(201);
    expect(res.body).toEqual({
      id: expect.any(String),
      url: 'http://127.0.0.1:9/x',
      types: ['agent.created'],
      description: 'CI',
      secret: expect.stringMatching(/^whsec_[A-Za-z0-9+/]{43}=$/),
      createdAt: expect.any(String),
      secretRotatedAt: null,
      backlog: { pending: 0, maxPending: 10_000, droppingSince: null, dropped: 0, firstDroppedAt: null, lastDroppedAt: null },
    });
    const one = await t.http
      .get(`/api/v1/webhooks/${res.body.id}`)
      .set(...admin())
      .expect(200);
    expect(one.body).toEqual({ ...res.body, secret: undefined });
    const list = await t.http
      .get('/api/v1/webhooks')
      .set(...admin())
      .expect(200);
    expect(JSON.stringify(list.body)).not.toContain(res.body.secret);
    expect(list.body.items.map((w: { id: string }) => w.id)).toContain(res.body.id);
    const stored: { secret_sealed: string }[] = await ds.query(`SELECT secret_sealed FROM webhook_endpoint WHERE id = $1`, [res.body.id]);
    expect(stored[0].secret_sealed).not.toContain(res.body.secret.slice(6));
    const audit = await t.http
      .get('/api/v1/audit-events?type=webhook.created')
      .set(...admin())
      .expect(200);
    expect(audit.body.items[0]).toMatchObject({
      type: 'webhook.created',
      target: { type: 'webhook', id: res.body.id },
      data: { url: 'http://127.0.0.1:9/x', types: ['agent.created'] },
    });
    expect(JSON.stringify(audit.body)).not.toContain(res.body.secret);
    await t.http
      .delete(`/api/v1/webhooks/${res.body.id}`)
      .set(...admin())
      .expect(204);
  });

  it('refuses bad endpoints with 400 naming the field, a URL the egress policy refuses with 422 egress_refused, and writes nothing', async () => {
    const before = await ds.query(`SELECT count(*)::int AS n FROM webhook_endpoint`);
    const bad: [object, string][] = [
      [{ url: 'not a url', types: ['agent.created'] }, 'url'],
      [{ url: 'https://example.com/x', types: [] }, 'types'],
      [{ url: 'https://example.com/x', types: ['nope'] }, 'types[0]'],
      [{ url: 'https://example.com/x', types: ['agent.created', 'agent.created'] }, 'types'],
      [{ url: 'https://example.com/x', types: ['__proto__'] }, 'types[0]'],
      [{ url: 'https://example.com/x', types: 'agent.created' }, 'types'],
      [{ url: 'https://example.com/x', types: ['*'], secret: 'mine' }, 'secret'],
      [{ url: 'https://example.com/x', types: ['*'], description: 'x'.repeat(501) }, 'description'],
      [{ url: `https://example.com/${'x'.repeat(2048)}`, types: ['*'] }, 'url'],
    ];
    for (const [body, path] of bad) {
      const res = await t.http
        .post('/api/v1/webhooks')
        .set(...admin())
        .send(body);
      expect([res.status, res.body.code, res.body.errors?.map((e: { path: string }) => e.path)]).toEqual([
        400,
        'invalid_request',
        expect.arrayContaining([path]),
      ]);
    }
    for (const url of [
      'http://10.1.2.3/hook',
      'https://169.254.169.254/latest',
      'http://example.com/plain-http',
      'ftp://example.com/x',
      'https://user:pw@example.com/x',
    ]) {
      const res = await t.http
        .post('/api/v1/webhooks')
        .set(...admin())
        .send({ url, types: ['*'] });
      expect([res.status, res.body.code, res.body.errors?.[0]?.path]).toEqual([422, 'egress_refused', 'url']);
    }
    expect(await ds.query(`SELECT count(*)::int AS n FROM webhook_endpoint`)).toEqual(before);
  });

  it('delivers each event signed, retries a failing receiver with backoff, and logs every attempt', async () => {
    const { id, receiver } = await endpoint(['agent.created']);
    const before = await scrapeMetrics(t);
    // The first two attempts of each event fail, the third is accepted.
    receiver.answer = (_id, nth) => (nth <= 2 ? 503 : 204);
    const agents = [await createAgent(), await createAgent(), await createAgent()];
    await t.http
      .post(`/api/v1/orgs/${org.id}/api-keys`)
      .set(...admin())
      .send({ name: 'not delivered', roles: ['viewer'] })
      .expect(201);
    const log = await until(
      () => deliveries(id),
      (items) => items.length === 3 && items.every((d) => d.status === 'succeeded'),
    );
    expect(receiver.received.every((r) => r.valid)).toBe(true);
    // Every event accepted exactly once, after exactly three attempts.
    const accepted = receiver.accepted();
    expect(accepted).toHaveLength(3);
    expect(new Set(accepted.map((r) => r.id)).size).toBe(3);
    expect([...receiver.countsById().values()]).toEqual([3, 3, 3]);
    const bodies = accepted.map((r) => JSON.parse(r.body));
    expect(bodies.map((b) => b.target.id).sort()).toEqual([...agents].sort());
    for (const b of bodies)
      expect(b).toMatchObject({
        type: 'agent.created',
        orgId: org.id,
        id: expect.any(String),
        at: expect.any(String),
        actor: expect.any(Object),
        data: expect.any(Object),
      });
    for (const d of log) {
      expect(d).toMatchObject({ type: 'agent.created', status: 'succeeded', attempts: 3, lastStatus: 204, nextAttemptAt: null });
      expect(d.history.map((a) => a.status)).toEqual([503, 503, 204]);
      expect(d.history.map((a) => a.attempt)).toEqual([1, 2, 3]);
    }
    // The webhook-id is the event id, the same on every attempt.
    expect(accepted.map((r) => r.id).sort()).toEqual(log.map((d) => d.eventId).sort());
    expect(await deliveries(id, org, '?status=failed')).toEqual([]);
    // Every attempt counted by its outcome, and timed.
    const after = await scrapeMetrics(t);
    const grew = (series: string) => metricSample(after, series) - metricSample(before, series);
    expect(grew('webhook_deliveries_total{outcome="retrying"}')).toBe(6);
    expect(grew('webhook_deliveries_total{outcome="delivered"}')).toBe(3);
    expect(grew('webhook_delivery_duration_seconds_count{outcome="delivered"}')).toBe(3);
  });

  it('a receiver that never answers holds up nobody else, and its attempts time out', async () => {
    const hung = await endpoint(['agent.created']);
    hung.receiver.answer = () => 'hang';
    const fine = await endpoint(['agent.created']);
    const started = Date.now();
    for (let i = 0; i < 5; i++) await createAgent();
    await until(
      () => deliveries(fine.id),
      (items) => items.length === 5 && items.every((d) => d.status === 'succeeded'),
      10_000,
    );
    // Delivered while the hung receiver still held its attempts (each times out after 1 s).
    expect(Date.now() - started).toBeLessThan(5_000);
    const timedOut = await until(
      () => deliveries(hung.id),
      (items) => items.some((d) => d.history.some((a) => a.error !== null)),
    );
    expect(timedOut.find((d) => d.history.some((a) => a.error))!.history.find((a) => a.error)!.error).toMatch(/within 1000 ms|timeout|abort/i);
    await t.http
      .delete(`/api/v1/webhooks/${hung.id}`)
      .set(...admin())
      .expect(204);
  });

  it('gives up after the retry window: the delivery is failed, with its attempts', async () => {
    const { id, receiver } = await endpoint(['agent.created']);
    receiver.answer = () => 500;
    await ds.query(`UPDATE webhook_endpoint SET types = '{agent.created}' WHERE id = $1`, [id]);
    await createAgent();
    // Age the delivery to the end of its window: the next failure is the last.
    await until(
      () => deliveries(id),
      (items) => items.length === 1 && items[0].attempts >= 1,
    );
    await ds.query(`UPDATE webhook_delivery SET created_at = now() - interval '61 seconds' WHERE endpoint_id = $1`, [id]);
    const [d] = await until(
      () => deliveries(id),
      (items) => items[0].status === 'failed',
    );
    expect(d).toMatchObject({ status: 'failed', lastStatus: 500, nextAttemptAt: null });
    expect(metricSample(await scrapeMetrics(t), 'webhook_deliveries_total{outcome="dead"}')).toBeGreaterThanOrEqual(1);
    expect(d.attempts).toBeGreaterThanOrEqual(2);
    expect(d.history).toHaveLength(d.attempts);
  });

  it('delivers only the chosen types, and * delivers every type', async () => {
    const keysOnly = await endpoint(['api_key.created']);
    const all = await endpoint(['*']);
    await createAgent();
    await t.http
      .post(`/api/v1/orgs/${org.id}/api-keys`)
      .set(...admin())
      .send({ name: 'typed', roles: ['viewer'] })
      .expect(201);
    const items = await until(
      () => deliveries(all.id),
      (x) => x.length >= 3 && x.every((d) => d.status === 'succeeded'),
    );
    // Its own creation too: the endpoint exists when the event that records it is written.
    expect(items.map((d) => d.type).sort()).toEqual(['agent.created', 'api_key.created', 'webhook.created']);
    const typed = await until(
      () => deliveries(keysOnly.id),
      (x) => x.length >= 1 && x.every((d) => d.status === 'succeeded'),
    );
    expect(typed.map((d) => d.type)).toEqual(['api_key.created']);
  });

  it('DELETE: 204, webhook.deleted, pending deliveries end failed, then 404 everywhere', async () => {
    const { id, receiver } = await endpoint(['agent.created']);
    receiver.answer = () => 500;
    await createAgent();
    await until(
      () => deliveries(id),
      (items) => items.length === 1 && items[0].attempts >= 1,
    );
    await t.http
      .delete(`/api/v1/webhooks/${id}`)
      .set(...admin())
      .expect(204);
    const rows: { status: string; last_error: string }[] = await ds.query(`SELECT status, last_error FROM webhook_delivery WHERE endpoint_id = $1`, [id]);
    expect(rows).toEqual([{ status: 'failed', last_error: 'endpoint deleted' }]);
    const audit = await t.http
      .get('/api/v1/audit-events?type=webhook.deleted')
      .set(...admin())
      .expect(200);
    expect(audit.body.items[0]).toMatchObject({ target: { type: 'webhook', id } });
    await t.http
      .get(`/api/v1/webhooks/${id}`)
      .set(...admin())
      .expect(404);
    await t.http
      .get(`/api/v1/webhooks/${id}/deliveries`)
      .set(...admin())
      .expect(404);
    await t.http
      .delete(`/api/v1/webhooks/${id}`)
      .set(...admin())
      .expect(404);
  });

  it('a delivery its event made while the endpoint was being deleted is failed, never sent', async () => {
    const { id, receiver } = await endpoint(['agent.created']);
    receiver.answer = () => 500;
    await createAgent();
    await until(
      () => deliveries(id),
      (items) => items.length === 1 && items[0].attempts >= 1,
    );
    // As when the event's transaction read the endpoint live and committed after the deletion had
    // failed the pending deliveries it could see: deleted, with this one still pending.
    await ds.query(`UPDATE webhook_endpoint SET deleted_at = now() WHERE id = $1`, [id]);
    // A retry claimed before that (they come 100 ms apart here) is already on its way: it fails
    // on the 500 before the receiver starts answering 204. CI once saw one land after the switch.
    await until(
      async () =>
        (await ds.query(
          `SELECT count(*)::int AS n FROM webhook_attempt a JOIN webhook_delivery d ON d.id = a.delivery_id WHERE d.endpoint_id = $1 AND a.finished_at IS NULL`,
          [id],
        )) as { n: number }[],
      (r) => r[0].n === 0,
    );
    // Still answering 500: an attempt claimed just before the deletion (claimed, its attempt row not
    // yet written when the wait above looked) fails and is retried, so it cannot end the delivery
    // `succeeded` (CI saw that twice); its retry finds the endpoint deleted.
    await ds.query(`UPDATE webhook_delivery SET next_attempt_at = now() WHERE endpoint_id = $1`, [id]);
    const rows = await until(
      async () => (await ds.query(`SELECT status, last_error FROM webhook_delivery WHERE endpoint_id = $1`, [id])) as { status: string; last_error: string }[],
      (r) => r[0]?.status !== 'pending',
    );
    expect(rows).toEqual([{ status: 'failed', last_error: 'endpoint deleted' }]);
    // Nothing is sent once it failed so.
    const sent = receiver.received.length;
    await new Promise((r) => setTimeout(r, 500));
    expect(receiver.received.length).toBe(sent);
  });

  it('at most 50 endpoints per organization, also when many are asked for at once (409 conflict past it)', async () => {
    const crowded = await createOrg(t);
    // Nothing listens on port 9: nothing is delivered, and creating calls nothing.
    const answers = await Promise.all(
      Array.from({ length: 70 }, (_, i) =>
        t.http
          .post('/api/v1/webhooks')
          .set(...admin(crowded))
          .send({ url: `http://127.0.0.1:9/hook-${i}`, types: ['agent.created'] }),
      ),
    );
    expect(answers.filter((r) => r.status === 201).length).toBe(50);
    expect(new Set(answers.filter((r) => r.status !== 201).map((r) => `${r.status} ${r.body.code}`))).toEqual(new Set(['409 conflict']));
    const listed = await t.http
      .get('/api/v1/webhooks?limit=200')
      .set(...admin(crowded))
      .expect(200);
    expect(listed.body.items).toHaveLength(50);
  });

  it("another organization's endpoint is not found, and its events never reach ours", async () => {
    const mine = await endpoint(['agent.created']);
    const theirs = await endpoint(['agent.created'], other);
    for (const path of [`/api/v1/webhooks/${mine.id}`, `/api/v1/webhooks/${mine.id}/deliveries`]) {
      const res = await t.http
        .get(path)
        .set(...admin(other))
        .expect(404);
      expect(res.body.code).toBe('not_found');
    }
    await t.http
      .delete(`/api/v1/webhooks/${mine.id}`)
      .set(...admin(other))
      .expect(404);
    await createAgent(other);
    await until(
      () => deliveries(theirs.id, other),
      (x) => x.length === 1 && x[0].status === 'succeeded',
    );
    expect(await deliveries(mine.id)).toEqual([]);
    for (const role of ['viewer', 'builder', 'agent', 'approver'] as const) {
      await t.http
        .get('/api/v1/webhooks')
        .set(...bearer(org.keys[role]))
        .expect(403);
    }
  });
});

describe('webhooks of several organizations on one node (e2e)', () => {
  let t: TestApp;
  const receivers: WebhookReceiver[] = [];

  beforeAll(async () => {
    // Attempts that hang hold their slots for the whole timeout: long enough to see who waits.
    t = await createTestApp({
      config: { events: { heartbeatMs: 15_000, pollMs: 500, webhookTimeoutMs: 30_000, webhookRetryBaseMs: 100, webhookRetryWindowMs: 60_000 } },
    });
  }, 180_000);
  afterAll(async () => {
    await t.close();
    await Promise.all(receivers.map((r) => r.stop()));
  });

  async function endpoint(o: TestOrg, hang: boolean): Promise<{ id: string; receiver: WebhookReceiver }> {
    const receiver = await WebhookReceiver.start();
    receivers.push(receiver);
    if (hang) receiver.answer = () => 'hang';
    const res = await t.http
      .post('/api/v1/webhooks')
      .set(...bearer(o.keys.admin))
      .send({ url: receiver.url, types: ['*'] })
      .expect(201);
    receiver.secret = res.body.secret;
    return { id: res.body.id, receiver };
  }

  it("one organization's hung receivers do not hold up another's deliveries", async () => {
    const noisy = await createOrg(t);
    const quiet = await createOrg(t);
    // Ten hung endpoints, two slots each: more than the node's sixteen.
    const hung = await Promise.all(Array.from({ length: 10 }, () => endpoint(noisy, true)));
    for (let i = 0; i < 3; i++) {
      await t.http
        .post('/api/v1/agents')
        .set(...bearer(noisy.keys.builder))
        .send({ slug: `noisy-${i}`, name: 'Noisy' })
        .expect(201);
    }
    await until(
      async () => hung.reduce((n, h) => n + h.receiver.received.length, 0),
      (n) => n >= 4,
    );
    const fine = await endpoint(quiet, false);
    const started = Date.now();
    await t.http
      .post('/api/v1/agents')
      .set(...bearer(quiet.keys.builder))
      .send({ slug: 'quiet', name: 'Quiet' })
      .expect(201);
    await until(
      async () => fine.receiver.accepted().length,
      (n) => n >= 1,
      25_000,
    );
    // Well before any hung attempt times out (30 s) and frees a slot.
    expect(Date.now() - started).toBeLessThan(10_000);
    // The noisy organization holds at most its share of the node's slots.
    expect(hung.reduce((n, h) => n + h.receiver.received.length, 0)).toBeLessThanOrEqual(4);
  });
});
