import { DataSource } from 'typeorm';
import { WebhookBacklogRepository } from '../src/events/webhook-backlog.repository';
import { WebhookBacklogSweeper } from '../src/events/webhook-backlog.service';
import { BACKLOG_ACTOR } from '../src/events/webhook-backlog';
import { WebhooksRepository } from '../src/events/webhooks.repository';
import { PENDING_REUSE_MS } from '../src/events/webhooks.service';
import { metricSample, scrapeMetrics } from './support/metrics';
import { bearer, createOrg, createTestApp, TestApp, TestOrg } from './support/test-app';
import { until } from './support/until';
import { WebhookReceiver } from './support/webhook-receiver';

/** A small cap, so a hanging receiver reaches it in a few events; writing resumes at half. */
const MAX_PENDING = 6;
const RESUME_AT = 3;

interface Backlog {
  pending: number;
  maxPending: number;
  droppingSince: string | null;
  dropped: number;
  firstDroppedAt: string | null;
  lastDroppedAt: string | null;
}

/**
 * API.md "Events, webhooks, browsers": an endpoint has at most WEBHOOK_MAX_PENDING_PER_ENDPOINT
 * pending deliveries. At the cap its new events are not written as deliveries (counted, shown on
 * the endpoint, audited) until half have drained; other endpoints and organizations are not
 * touched. On either database. The sweep is run by the test (its interval is far off), so each
 * step is seen as it happens.
 */
describe('webhooks: pending deliveries bounded per endpoint (e2e)', () => {
  let t: TestApp;
  let ds: DataSource;
  let sweeper: WebhookBacklogSweeper;
  let org: TestOrg;
  let other: TestOrg;
  const receivers: WebhookReceiver[] = [];

  beforeAll(async () => {
    t = await createTestApp({
      config: {
        webhookMaxPendingPerEndpoint: MAX_PENDING,
        sweepIntervalMs: 3_600_000,
        // A hung attempt ends after a second and is retried in ten minutes: its delivery stays pending.
        events: { heartbeatMs: 15_000, pollMs: 300, webhookTimeoutMs: 1_000, webhookRetryBaseMs: 600_000, webhookRetryWindowMs: 3_600_000 },
      },
    });
    ds = t.app.get(DataSource);
    sweeper = t.app.get(WebhookBacklogSweeper);
    org = await createOrg(t);
    other = await createOrg(t);
  }, 180_000);
  afterAll(async () => {
    await t.close();
    await Promise.all(receivers.map((r) => r.stop()));
  });

  async function endpoint(o: TestOrg, types: string[], answer: number | 'hang'): Promise<{ id: string; receiver: WebhookReceiver }> {
    const receiver = await WebhookReceiver.start();
    receiver.answer = () => answer;
    receivers.push(receiver);
    const res = await t.http
      .post('/api/v1/webhooks')
      .set(...bearer(o.keys.admin))
      .send({ url: receiver.url, types })
      .expect(201);
    receiver.secret = res.body.secret;
    return { id: res.body.id, receiver };
  }

  let agents = 0;
  /** One `agent.created` event; its id. */
  const event = async (o: TestOrg) =>
    (
      await t.http
        .post('/api/v1/agents')
        .set(...bearer(o.keys.builder))
        .send({ slug: `backlog-${++agents}`, name: 'Backlog' })
        .expect(201)
    ).body.id as string;

  const backlog = async (o: TestOrg, id: string): Promise<Backlog> =>
    (
      await t.http
        .get(`/api/v1/webhooks/${id}`)
        .set(...bearer(o.keys.admin))
        .expect(200)
    ).body.backlog;

  const stored = async (endpointId: string, status?: string): Promise<number> =>
    (
      await ds.query(`SELECT count(*)::int AS n FROM webhook_delivery WHERE endpoint_id = $1 AND ($2::text IS NULL OR status = $2)`, [
        endpointId,
        status ?? null,
      ])
    )[0].n;

  const audited = async (o: TestOrg, type: string) =>
    (
      await t.http
        .get(`/api/v1/audit-events?type=${type}`)
        .set(...bearer(o.keys.admin))
        .expect(200)
    ).body.items as { id: string; at: string; actor: { type: string; id: string }; target: { id: string }; data: Record<string, unknown> }[];

  /** The receiver's deliveries of `agent.created`, by the agent each names. */
  const agentsReceived = (r: WebhookReceiver) =>
    r.accepted().flatMap((x) => {
      const body = JSON.parse(x.body) as { type: string; target: { id: string } };
      return body.type === 'agent.created' ? [body.target.id] : [];
    });

  it('stops writing deliveries for an endpoint at its cap, counts and shows what it left out, and resumes once half has drained', async () => {
    const hung = await endpoint(org, ['agent.created'], 'hang');
    // The organization's other endpoint, which also hears about the cap.
    const fine = await endpoint(org, ['agent.created', 'webhook.backlogged', 'webhook.backlog_cleared'], 204);
    const elsewhere = await endpoint(other, ['*'], 204);
    const scrapedBefore = metricSample(await scrapeMetrics(t), 'webhook_deliveries_total{outcome="dropped"}');

    for (let i = 0; i < MAX_PENDING; i++) await event(org);
    expect(await backlog(org, hung.id)).toEqual({
      pending: MAX_PENDING,
      maxPending: MAX_PENDING,
      droppingSince: null,
      dropped: 0,
      firstDroppedAt: null,
      lastDroppedAt: null,
    });
    // Each attempted once (hung for the timeout), to be retried in ten minutes: pending throughout.
    await until(
      async () =>
        (
          await ds.query(`SELECT count(*)::int AS n FROM webhook_delivery WHERE endpoint_id = $1 AND status = 'pending' AND last_error IS NOT NULL`, [hung.id])
        )[0].n,
      (n) => n === MAX_PENDING,
      30_000,
    );

    const marked = await sweeper.sweepOnce();
    expect(marked.marked).toEqual([hung.id]);
    const atCap = await backlog(org, hung.id);
    expect(atCap.droppingSince).not.toBeNull();
    const [auditedMark] = await audited(org, 'webhook.backlogged');
    expect(auditedMark).toMatchObject({
      actor: BACKLOG_ACTOR,
      target: { id: hung.id },
      data: { url: hung.receiver.url, maxPending: MAX_PENDING, resumesAt: RESUME_AT },
    });
    // Sweeping again changes nothing: one mark, one event.
    expect((await sweeper.sweepOnce()).marked).toEqual([]);
    expect(await audited(org, 'webhook.backlogged')).toHaveLength(1);

    // At the cap: four more events are written for the other endpoints, not for this one.
    const left: string[] = [];
    for (let i = 0; i < 4; i++) left.push(await event(org));
    const otherAgent = await event(other);
    expect(await stored(hung.id)).toBe(MAX_PENDING);
    await until(
      async () => agentsReceived(fine.receiver),
      (ids) => left.every((id) => ids.includes(id)),
    );
    await until(
      async () => agentsReceived(elsewhere.receiver),
      (ids) => ids.includes(otherAgent),
    );
    expect(fine.receiver.accepted().some((x) => JSON.parse(x.body).type === 'webhook.backlogged')).toBe(true);
    expect(await backlog(org, fine.id)).toMatchObject({ pending: 0, droppingSince: null, dropped: 0 });
    expect(await backlog(other, elsewhere.id)).toMatchObject({ pending: 0, droppingSince: null, dropped: 0 });

    // Counted once final (on PostgreSQL another database's transaction can hold that back a while).
    const counted = await until(
      async () => {
        await sweeper.sweepOnce();
        return backlog(org, hung.id);
      },
      (b) => b.dropped === 4,
      60_000,
    );
    const leftEvents = (await audited(org, 'agent.created')).filter((e) => left.includes(e.target.id)).map((e) => e.at);
    expect(counted).toMatchObject({ pending: MAX_PENDING, dropped: 4, firstDroppedAt: leftEvents.sort()[0], lastDroppedAt: leftEvents.sort()[3] });
    // The list shows the same.
    const listed = await t.http
      .get('/api/v1/webhooks')
      .set(...bearer(org.keys.admin))
      .expect(200);
    expect(listed.body.items.find((w: { id: string }) => w.id === hung.id).backlog).toEqual(counted);
    // What was left out stays in the audit log, from firstDroppedAt on.
    const recoverable = await t.http
      .get(`/api/v1/audit-events?type=agent.created&since=${encodeURIComponent(counted.firstDroppedAt!)}`)
      .set(...bearer(org.keys.admin))
      .expect(200);
    expect(recoverable.body.items.map((e: { target: { id: string } }) => e.target.id).sort()).toEqual([...left].sort());
    expect(metricSample(await scrapeMetrics(t), 'webhook_deliveries_total{outcome="dropped"}') - scrapedBefore).toBe(4);

    // The receiver answers again; two deliveries come due and succeed: 4 pending, above half.
    hung.receiver.answer = () => 204;
    await ds.query(
      `UPDATE webhook_delivery SET next_attempt_at = now() WHERE id IN (
         SELECT id FROM webhook_delivery WHERE endpoint_id = $1 AND status = 'pending' ORDER BY created_at LIMIT 2)`,
      [hung.id],
    );
    await until(
      () => stored(hung.id, 'succeeded'),
      (n) => n === 2,
    );
    expect((await sweeper.sweepOnce()).cleared).toEqual([]);
    const stillDropping = await event(org);
    expect(await stored(hung.id)).toBe(MAX_PENDING);

    // The rest come due: drained, the mark is cleared, and the next event is written and delivered.
    await ds.query(`UPDATE webhook_delivery SET next_attempt_at = now() WHERE endpoint_id = $1 AND status = 'pending'`, [hung.id]);
    await until(
      () => stored(hung.id, 'pending'),
      (n) => n <= RESUME_AT,
    );
    expect((await sweeper.sweepOnce()).cleared).toEqual([hung.id]);
    expect(await audited(org, 'webhook.backlog_cleared')).toMatchObject([{ actor: BACKLOG_ACTOR, target: { id: hung.id }, data: { url: hung.receiver.url } }]);
    await until(
      async () => fine.receiver.accepted().filter((x) => JSON.parse(x.body).type === 'webhook.backlog_cleared').length,
      (n) => n === 1,
    );
    const resumed = await event(org);
    await until(
      async () => agentsReceived(hung.receiver),
      (ids) => ids.includes(resumed),
    );
    expect(agentsReceived(hung.receiver)).not.toContain(stillDropping);

    // The count ends once nothing that saw the mark can still commit; the episode stays shown.
    await until(
      async () => {
        await sweeper.sweepOnce();
        return (await ds.query(`SELECT drop_cursor_tx IS NULL AS done FROM webhook_endpoint WHERE id = $1`, [hung.id]))[0].done as boolean;
      },
      (done) => done,
      60_000,
    );
    expect(await backlog(org, hung.id)).toMatchObject({ droppingSince: null, dropped: 5, firstDroppedAt: counted.firstDroppedAt });
  }, 120_000);

  it('decides once and counts each event once when several nodes sweep at once', async () => {
    const o = await createOrg(t);
    const hung = await endpoint(o, ['agent.created'], 'hang');
    for (let i = 0; i < MAX_PENDING; i++) await event(o);
    const repo = t.app.get(WebhookBacklogRepository);
    const candidate = { id: hung.id, orgId: o.id, url: hung.receiver.url, backlogged: false };
    const mark = {
      type: 'webhook.backlogged' as const,
      orgId: o.id,
      actor: BACKLOG_ACTOR,
      target: { type: 'webhook', id: hung.id },
      data: { url: hung.receiver.url },
    };
    const won = await Promise.all(Array.from({ length: 4 }, () => repo.markIfFull(candidate, MAX_PENDING, mark)));
    expect(won.filter(Boolean)).toHaveLength(1);
    expect(await audited(o, 'webhook.backlogged')).toHaveLength(1);

    for (let i = 0; i < 3; i++) await event(o);
    let counted = 0;
    await until(
      async () => {
        // Four nodes that read the same position, each counting a batch of 2 from it.
        const c = (await repo.counting()).find((x) => x.id === hung.id)!;
        const rounds = await Promise.all(Array.from({ length: 4 }, () => repo.countDrops(c, c.at, 2)));
        // Whichever moved the position counted; the others found it moved (or nothing to count).
        expect(rounds.filter((r) => r !== undefined && r.scanned > 0).length).toBeLessThanOrEqual(1);
        counted += rounds.reduce((n, r) => n + (r?.dropped ?? 0), 0);
        return (await backlog(o, hung.id)).dropped;
      },
      (n) => n === 3,
      60_000,
    );
    expect(counted).toBe(3);
    expect(await stored(hung.id)).toBe(MAX_PENDING);
  }, 60_000);

  it("counts an organization's backlogs once for the reads that come together, and again past PENDING_REUSE_MS", async () => {
    const o = await createOrg(t);
    const hung = [await endpoint(o, ['agent.created'], 'hang'), await endpoint(o, ['agent.created'], 'hang')];
    for (let i = 0; i < 2; i++) await event(o);
    const counts = jest.spyOn(t.app.get(WebhooksRepository), 'pendingCounts');
    try {
      const list = () =>
        t.http
          .get('/api/v1/webhooks')
          .set(...bearer(o.keys.admin))
          .expect(200)
          .then((r) => r.body.items.map((w: { id: string; backlog: Backlog }) => [w.id, w.backlog.pending]));
      const reads = await Promise.all([...Array.from({ length: 12 }, list), backlog(o, hung[0].id).then((b) => [[hung[0].id, b.pending]])]);
      for (const read of reads) expect(Object.fromEntries(read)).toMatchObject({ [hung[0].id]: 2, ...(read.length > 1 ? { [hung[1].id]: 2 } : {}) });
      // Thirteen reads at once: one count (two when they came over more than the reuse time).
      expect(counts.mock.calls.length).toBeLessThanOrEqual(2);
      expect(counts.mock.calls.every(([orgId]) => orgId === o.id)).toBe(true);

      await event(o);
      const started = Date.now();
      const seen = await until(list, (read) => read.every(([, n]: [string, number]) => n === 3), 10_000);
      expect(seen).toHaveLength(2);
      expect(Date.now() - started).toBeLessThan(PENDING_REUSE_MS + 5_000);
    } finally {
      counts.mockRestore();
    }
  }, 60_000);
});
