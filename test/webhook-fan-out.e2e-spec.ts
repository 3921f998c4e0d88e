import { Client } from 'pg';
import { DataSource } from 'typeorm';
import { WebhookBacklogSweeper } from '../src/events/webhook-backlog.service';
import { BACKLOG_ACTOR } from '../src/events/webhook-backlog';
import { MAX_DELIVERIES_PER_STATEMENT } from '../migrations/1765000000000-webhook-fan-out-per-statement';
import { bearer, createOrg, createTestApp, TestApp, TestOrg } from './support/test-app';
import { until } from './support/until';

/**
 * API.md "Events, webhooks, browsers": one statement's events are written to an endpoint as at
 * most 1,000 deliveries. The outbox writes deliveries in the transaction that writes the events,
 * and every organization's event streams wait for it to end: a key revoked with 8,301 runs waiting
 * and 50 endpoints on `*` wrote 417,025 deliveries in 8.3 s, and another organization's event
 * reached its stream 8.1 s after its commit (attack round 20, AA-F4). An endpoint past the bound
 * is marked as at its cap, as the sweep marks one, and what it missed is counted and shown.
 */
/** A transaction held open beside the server's: the embedded database serves one connection at a time. */
const onRealServer = Boolean(process.env.DATABASE_URL);
const itOnRealServer = onRealServer ? it : it.skip;

describe('webhooks: deliveries one statement writes to an endpoint (e2e)', () => {
  let t: TestApp;
  let ds: DataSource;
  let sweeper: WebhookBacklogSweeper;
  let org: TestOrg;
  let other: TestOrg;

  beforeAll(async () => {
    t = await createTestApp({
      config: {
        sweepIntervalMs: 3_600_000,
        // Nothing listens at port 9: each delivery fails once and is retried in ten minutes, so it stays pending.
        events: { heartbeatMs: 15_000, pollMs: 300, webhookTimeoutMs: 1_000, webhookRetryBaseMs: 600_000, webhookRetryWindowMs: 3_600_000 },
      },
    });
    ds = t.app.get(DataSource);
    sweeper = t.app.get(WebhookBacklogSweeper);
    org = await createOrg(t);
    other = await createOrg(t);
  }, 180_000);
  afterAll(() => t.close());

  const endpoint = async (o: TestOrg, types: string[]): Promise<string> =>
    (
      await t.http
        .post('/api/v1/webhooks')
        .set(...bearer(o.keys.admin))
        .send({ url: 'http://127.0.0.1:9/fan-out', types })
        .expect(201)
    ).body.id;

  /** Deliveries stored for the endpoint, of one type of event or all. */
  const stored = async (endpointId: string, type?: string): Promise<number> =>
    (
      await ds.query(
        `SELECT count(*)::int AS n FROM webhook_delivery d JOIN audit_event e ON e.seq = d.event_seq
          WHERE d.endpoint_id = $1 AND ($2::text IS NULL OR e.type = $2)`,
        [endpointId, type ?? null],
      )
    )[0].n;

  const backlog = async (o: TestOrg, id: string) =>
    (
      await t.http
        .get(`/api/v1/webhooks/${id}`)
        .set(...bearer(o.keys.admin))
        .expect(200)
    ).body.backlog as { droppingSince: string | null; dropped: number; firstDroppedAt: string | null; lastDroppedAt: string | null };

  it("writes an endpoint the first 1,000 of a statement's events, marks it at its cap, counts the rest; other endpoints and organizations as before", async () => {
    const all = await endpoint(org, ['*']);
    const hears = await endpoint(org, ['webhook.backlogged']);
    const elsewhere = await endpoint(other, ['*']);
    const events = 2_500;

    // One statement, as a key's revocation writes its runs' `run.failed` events (4,096 a statement).
    await ds.query(
      `INSERT INTO audit_event (id, org_id, type, actor_type, actor_id, target_type, target_id)
       SELECT gen_random_uuid(), CASE WHEN g <= $3 THEN $1 ELSE $2 END::uuid, 'run.failed', 'system', 'revocation', 'run', g::text
         FROM generate_series(1, $3 + 10) g`,
      [org.id, other.id, events],
    );

    expect(await stored(all, 'run.failed')).toBe(MAX_DELIVERIES_PER_STATEMENT);
    const [first] = await ds.query(
      `SELECT min(e.target_id::int) AS lo, max(e.target_id::int) AS hi FROM webhook_delivery d JOIN audit_event e ON e.seq = d.event_seq WHERE d.endpoint_id = $1 AND e.type = 'run.failed'`,
      [all],
    );
    expect(first).toEqual({ lo: 1, hi: MAX_DELIVERIES_PER_STATEMENT });
    expect((await backlog(org, all)).droppingSince).not.toBeNull();
    const marks = (
      await t.http
        .get('/api/v1/audit-events?type=webhook.backlogged')
        .set(...bearer(org.keys.admin))
        .expect(200)
    ).body.items as { actor: object; target: { id: string }; data: object }[];
    expect(marks).toEqual([
      expect.objectContaining({
        actor: BACKLOG_ACTOR,
        target: { type: 'webhook', id: all },
        data: { url: 'http://127.0.0.1:9/fan-out', maxPerStatement: MAX_DELIVERIES_PER_STATEMENT },
      }),
    ]);
    // The organization's other endpoint hears of it; the other organization's gets its 10 events.
    expect(await stored(hears, 'webhook.backlogged')).toBe(1);
    expect(await stored(elsewhere, 'run.failed')).toBe(10);
    expect((await backlog(other, elsewhere)).droppingSince).toBeNull();

    // The sweep counts what the mark left out and, with 1,000 pending (under half of 10,000), clears it.
    const counted = await until(
      async () => {
        await sweeper.sweepOnce();
        return backlog(org, all);
      },
      // The events past the bound, and the mark's own `webhook.backlogged`, of a type it takes (`*`) and written while it was marked.
      (b) => b.dropped === events - MAX_DELIVERIES_PER_STATEMENT + 1 && b.droppingSince === null,
      60_000,
    );
    expect(counted.firstDroppedAt).not.toBeNull();
    expect(counted.lastDroppedAt).not.toBeNull();
    // Written again from then on.
    await t.http
      .post('/api/v1/agents')
      .set(...bearer(org.keys.builder))
      .send({ slug: 'after-fan-out', name: 'After' })
      .expect(201);
    expect(await stored(all, 'agent.created')).toBe(1);
  }, 120_000);

  itOnRealServer(
    'counts as missed only what came after the endpoint, when a transaction older than it was running at the mark',
    async () => {
      // The count starts at the oldest transaction running on the server when the mark is written
      // (another test's, on a loaded machine): its organization's own setup, written before the
      // endpoint, was counted as missed (1,507 for 1,501 in a CI run).
      const holder = new Client({ connectionString: t.db.url });
      await holder.connect();
      try {
        await holder.query('BEGIN');
        await holder.query('SELECT pg_current_xact_id()');
        const late = await createOrg(t);
        const before = (await ds.query(`SELECT count(*)::int AS n FROM audit_event WHERE org_id = $1`, [late.id]))[0].n as number;
        expect(before).toBeGreaterThan(0);
        const endpointId = await endpoint(late, ['*']);
        await ds.query(
          `INSERT INTO audit_event (id, org_id, type, actor_type, actor_id, target_type, target_id)
         SELECT gen_random_uuid(), $1, 'run.failed', 'system', 'revocation', 'run', g::text FROM generate_series(1, 1200) g`,
          [late.id],
        );
        expect((await backlog(late, endpointId)).droppingSince).not.toBeNull();
        await holder.query('COMMIT');
        const counted = await until(
          async () => {
            await sweeper.sweepOnce();
            return backlog(late, endpointId);
          },
          (b) => b.droppingSince === null && b.dropped >= 1200 - MAX_DELIVERIES_PER_STATEMENT + 1,
          60_000,
        );
        // The 200 past the bound and the mark's own event; not the organization's events before the endpoint.
        expect(counted.dropped).toBe(1200 - MAX_DELIVERIES_PER_STATEMENT + 1);
      } finally {
        await holder.end();
      }
    },
    120_000,
  );
});
