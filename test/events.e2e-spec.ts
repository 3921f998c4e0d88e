import { Client } from 'pg';
import { randomUUID } from 'node:crypto';
import { ApiKeysRepository } from '../src/auth/api-keys.repository';
import { EventStreamService } from '../src/events/event-stream.service';
import { PositionSeals } from '../src/secrets/position-seals';
import { collectGarbage } from './support/gc';
import { SseClient } from './support/sse-client';
import { bearer, createOrg, createTestApp, TestApp, TestOrg } from './support/test-app';

/** API.md "Events, webhooks, browsers": GET /events, on either database. */
describe('GET /events (e2e)', () => {
  let t: TestApp;
  let base: string;
  let org: TestOrg;
  let other: TestOrg;
  const open: SseClient[] = [];

  beforeAll(async () => {
    t = await createTestApp({
      config: { events: { heartbeatMs: 300, pollMs: 5_000, webhookTimeoutMs: 5_000, webhookRetryBaseMs: 5_000, webhookRetryWindowMs: 3_600_000 } },
    });
    await t.app.listen(0, '127.0.0.1');
    const address = t.app.getHttpServer().address() as { port: number };
    base = `http://127.0.0.1:${address.port}/api/v1`;
    org = await createOrg(t);
    other = await createOrg(t);
    // The embedded database starts slowly on a loaded machine.
  }, 180_000);
  afterEach(() => {
    for (const c of open.splice(0)) c.close();
  });
  afterAll(() => t.close());

  async function stream(o: TestOrg, query = '', headers: Record<string, string> = {}, role: 'admin' | 'approver' = 'admin'): Promise<SseClient> {
    const c = await SseClient.open(`${base}/events${query}`, { authorization: `Bearer ${o.keys[role]}`, ...headers });
    open.push(c);
    // The opening `id:` line says the stream is attached.
    await c.waitFor((x) => x.lastId !== undefined);
    return c;
  }
  let n = 0;
  const createAgent = async (o: TestOrg) => {
    const res = await t.http
      .post('/api/v1/agents')
      .set(...bearer(o.keys.builder))
      .send({ slug: `ev-${++n}`, name: `Events ${n}` })
      .expect(201);
    return res.body.id as string;
  };
  /**
   * Two writers on connections of their own: `older` inside a transaction that already has its id
   * (so it holds the server's horizon back), `newer` committing each statement at once.
   */
  async function withTwoWriters(fn: (older: Client, newer: Client) => Promise<void>): Promise<void> {
    const older = new Client({ connectionString: t.db.url });
    const newer = new Client({ connectionString: t.db.url });
    await older.connect();
    await newer.connect();
    try {
      await older.query('BEGIN');
      await older.query('SELECT pg_current_xact_id()');
      await fn(older, newer);
    } finally {
      await older.end();
      await newer.end();
    }
  }
  const insertEvent = (db: Client, id: string) =>
    db.query(
      `INSERT INTO audit_event (id, org_id, type, actor_type, actor_id, target_type, target_id) VALUES ($1::uuid, $2, 'agent.created', 'system', 'test', 'agent', $1::text)`,
      [id, org.id],
    );
  /** A fresh approver key of `o` (its id and its token). */
  const approverKey = async (o: TestOrg, name: string): Promise<{ id: string; token: string }> =>
    (
      await t.http
        .post(`/api/v1/orgs/${o.id}/api-keys`)
        .set(...bearer(o.keys.admin))
        .send({ name, roles: ['approver'] })
        .expect(201)
    ).body;
  const createKey = (o: TestOrg) =>
    t.http
      .post(`/api/v1/orgs/${o.id}/api-keys`)
      .set(...bearer(o.keys.admin))
      .send({ name: `k${++n}`, roles: ['viewer'] })
      .expect(201);

  it("streams the organization's events as they are written, each with its position as id", async () => {
    const c = await stream(org);
    expect(c.response.headers['content-type']).toBe('text/event-stream; charset=utf-8');
    expect(c.response.headers['x-request-id']).toBeDefined();
    const agentId = await createAgent(org);
    await createKey(org);
    await c.waitFor((x) => x.events.length >= 2);
    const [first, second] = c.events;
    expect(first.event).toMatchObject({ type: 'agent.created', orgId: org.id, target: { type: 'agent', id: agentId } });
    expect(second.event).toMatchObject({ type: 'api_key.created', orgId: org.id });
    // Sealed: the transaction and sequence behind it are counters every organization shares.
    expect(first.id).toMatch(/^[A-Za-z0-9_-]{32}$/);
    expect(first.id).not.toBe(second.id);
    // The same event as the audit log shows.
    const log = await t.http
      .get('/api/v1/audit-events?type=agent.created')
      .set(...bearer(org.keys.admin))
      .expect(200);
    expect(log.body.items.find((e: { id: string }) => e.id === first.event.id)).toEqual(first.event);
  });

  it('shows one organization nothing of another', async () => {
    const mine = await stream(org);
    const theirs = await stream(other, '', {}, 'approver');
    await createAgent(other);
    await createAgent(org);
    await mine.waitFor((x) => x.events.length >= 1);
    await theirs.waitFor((x) => x.events.length >= 1);
    expect(mine.events.every((e) => e.event.orgId === org.id)).toBe(true);
    expect(theirs.events.every((e) => e.event.orgId === other.id)).toBe(true);
  });

  it("takes no id of another organization's stream, and its own ids count nothing the others wrote", async () => {
    const mine = await stream(org);
    const theirs = await stream(other);
    await createAgent(org);
    for (let i = 0; i < 3; i++) await createAgent(other);
    await createAgent(org);
    await mine.waitFor((x) => x.events.length >= 2);
    await theirs.waitFor((x) => x.events.length >= 3);
    // In the clear these were <transaction>-<sequence>: the gap between mine counted the other's three.
    const seal = t.app.get(PositionSeals).events(org.id);
    const [a, b] = mine.events.map((e) => seal.open(e.id)!);
    expect(b[1] - a[1]).toBeGreaterThanOrEqual(4n);
    expect(mine.events.map((e) => e.id)).not.toContain(`${a[0]}-${a[1]}`);
    const res = await SseClient.open(`${base}/events`, { authorization: `Bearer ${org.keys.admin}`, 'last-event-id': theirs.events[1].id }).then(
      (c) => (open.push(c), { status: 200, body: '' }),
      (err: { status: number; body: string }) => err,
    );
    expect(res.status).toBe(400);
    expect(JSON.parse(res.body)).toMatchObject({ code: 'invalid_request', errors: [{ path: 'Last-Event-ID', code: 'invalid_header' }] });
    // The same position, resumed by its own organization, is taken.
    const resumed = await stream(other, '', { 'last-event-id': theirs.events[1].id });
    await resumed.waitFor((x) => x.events.length >= 1);
    expect(resumed.events[0].event.id).toBe(theirs.events[2].event.id);
    // Where a stream opens is the server's horizon, which every organization's writes move: two
    // openings in a row do not show whether anyone wrote between them, and each resumes.
    const [x, y] = [await stream(org), await stream(org)];
    expect(x.lastId).not.toBe(y.lastId);
    const fromY = await stream(org, '', { 'last-event-id': y.lastId! });
    const agentId = await createAgent(org);
    await fromY.waitFor((z) => z.events.length >= 1);
    expect(fromY.events[0].event.target).toEqual({ type: 'agent', id: agentId });
  });

  it('types= sends only those types', async () => {
    const c = await stream(org, '?types=api_key.created');
    const both = await stream(org, '?types=agent.created&types=api_key.created');
    await createAgent(org);
    await createKey(org);
    await c.waitFor((x) => x.events.length >= 1);
    await both.waitFor((x) => x.events.length >= 2);
    expect(c.events.map((e) => e.event.type)).toEqual(['api_key.created']);
    expect(both.events.map((e) => e.event.type)).toEqual(['agent.created', 'api_key.created']);
  });

  it('Last-Event-ID resumes with exactly the events written since, none lost, none twice', async () => {
    const c = await stream(org);
    await createAgent(org);
    await c.waitFor((x) => x.events.length >= 1);
    const seen = c.events[0];
    c.close();
    const missed = [await createAgent(org), await createAgent(org), await createAgent(org)];
    const resumed = await stream(org, '', { 'last-event-id': seen.id });
    await resumed.waitFor((x) => x.events.length >= 3);
    await createAgent(org);
    await resumed.waitFor((x) => x.events.length >= 4);
    await new Promise((r) => setTimeout(r, 300));
    expect(resumed.events.slice(0, 3).map((e) => e.event.target)).toEqual(missed.map((id) => ({ type: 'agent', id })));
    expect(resumed.events).toHaveLength(4);
    expect(resumed.events.map((e) => e.event.id)).not.toContain(seen.event.id);
  });

  it('sends events in the numeric order of their positions, whatever their digit counts (none skipped on resume)', async () => {
    // Transaction ids of different lengths, as an organization's events have once the server's
    // counter passes a power of ten: read in text order ('10' < '9'), a batch ended at a large
    // position and the resume skipped every event between.
    const o = await createOrg(t);
    const db = new Client({ connectionString: t.db.url });
    await db.connect();
    const ids: string[] = [];
    try {
      // Below the server's horizon (the embedded database's counter is in the hundreds), so none is held back.
      const [{ horizon }] = (await db.query(`SELECT pg_snapshot_xmin(pg_current_snapshot())::text AS horizon`)).rows as { horizon: string }[];
      expect(BigInt(horizon)).toBeGreaterThan(100n);
      for (const tx of ['9', '10', '99', '100']) {
        const id = randomUUID();
        ids.push(id);
        await db.query(
          `INSERT INTO audit_event (id, org_id, type, actor_type, actor_id, target_type, target_id, tx)
           VALUES ($1::uuid, $2, 'agent.created', 'system', 'test', 'agent', $1::text, $3::xid8)`,
          [id, o.id, tx],
        );
      }
    } finally {
      await db.end();
    }
    const all = await stream(o, '?types=agent.created', { 'last-event-id': '0-0' });
    await all.waitFor((x) => x.events.length >= 4);
    expect(all.events.map((e) => e.event.id)).toEqual(ids);
    const seal = t.app.get(PositionSeals).events(o.id);
    expect(all.events.map((e) => seal.open(e.id)![0].toString())).toEqual(['9', '10', '99', '100']);
    // Resumed after the second, the three after it, in order.
    const resumed = await stream(o, '?types=agent.created', { 'last-event-id': all.events[1].id });
    await resumed.waitFor((x) => x.events.length >= 2);
    await new Promise((r) => setTimeout(r, 300));
    expect(resumed.events.map((e) => e.event.id)).toEqual(ids.slice(2));
  });

  it("a client that drops before any event resumes from the stream's opening id", async () => {
    const c = await stream(org);
    const opening = c.lastId!;
    expect(c.events).toHaveLength(0);
    c.close();
    const agentId = await createAgent(org);
    const resumed = await stream(org, '', { 'last-event-id': opening });
    await resumed.waitFor((x) => x.events.length >= 1);
    expect(resumed.events[0].event.target).toEqual({ type: 'agent', id: agentId });
  });

  it('sends a comment every heartbeat', async () => {
    const c = await stream(org);
    await c.waitFor((x) => x.comments >= 2, 3_000);
  });

  it('refuses bad input, other roles and no token before anything streams', async () => {
    const get = (query: string, headers: Record<string, string>) =>
      SseClient.open(`${base}/events${query}`, headers).then(
        (c) => {
          open.push(c);
          return { status: 200, body: '' };
        },
        (err: { status: number; body: string }) => ({ status: err.status, body: err.body }),
      );
    const admin = { authorization: `Bearer ${org.keys.admin}` };
    expect((await get('', {})).status).toBe(401);
    for (const role of ['viewer', 'builder', 'agent'] as const) expect((await get('', { authorization: `Bearer ${org.keys[role]}` })).status).toBe(403);
    for (const bad of ['x', '12', '-1-2', '1-2', '1-99999999999999999999', '184467440737095516160-1', randomUUID(), 'A'.repeat(32)]) {
      const res = await get('', { ...admin, 'last-event-id': bad });
      expect(res.status).toBe(400);
      expect(JSON.parse(res.body).errors[0].path).toBe('Last-Event-ID');
    }
    for (const query of ['?types=', '?types=nope', '?types=agent.created,__proto__', '?other=1']) {
      const res = await get(query, admin);
      expect(res.status).toBe(400);
    }
  });

  it('ends the streams of a key revoked after they opened', async () => {
    const key = await approverKey(org, 'doomed');
    const c = await SseClient.open(`${base}/events`, { authorization: `Bearer ${key.token}` });
    open.push(c);
    const ended = new Promise<void>((resolve) => c.response.on('end', () => resolve()));
    await t.http
      .delete(`/api/v1/orgs/${org.id}/api-keys/${key.id}`)
      .set(...bearer(org.keys.admin))
      .expect(204);
    await ended;
    await expect(SseClient.open(`${base}/events`, { authorization: `Bearer ${key.token}` })).rejects.toMatchObject({ status: 401 });
  });

  it("keeps a stream that opens while the open streams' keys are being checked", async () => {
    await stream(org);
    // A heartbeat's key check held until a stream with a key it did not ask about has opened.
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let asked!: (ids: string[]) => void;
    const checking = new Promise<string[]>((resolve) => (asked = resolve));
    const liveKeys = ApiKeysRepository.prototype.liveKeys;
    const spy = jest.spyOn(ApiKeysRepository.prototype, 'liveKeys').mockImplementationOnce(async function (this: ApiKeysRepository, ids: string[]) {
      asked(ids);
      await held;
      return liveKeys.call(this, ids);
    });
    try {
      const ids = await checking;
      const key = await approverKey(other, 'opened mid-check');
      expect(ids).not.toContain(key.id);
      const c = await SseClient.open(`${base}/events`, { authorization: `Bearer ${key.token}` });
      open.push(c);
      await c.waitFor((x) => x.lastId !== undefined);
      let ended = false;
      c.response.on('end', () => (ended = true));
      const before = c.comments;
      release();
      // The held check ends, and the beats after it check its key too: it is still open, and streams.
      await c.waitFor((x) => x.comments >= before + 3 || ended, 5_000);
      expect(ended).toBe(false);
      await createAgent(other);
      await c.waitFor((x) => x.events.length >= 1);
    } finally {
      release();
      spy.mockRestore();
    }
  });

  it('closes its streams when the application stops (clients reconnect elsewhere)', async () => {
    const streams = t.app.get(EventStreamService);
    const c = await stream(org);
    expect(streams.openStreams).toBeGreaterThan(0);
    const ended = new Promise<void>((resolve) => c.response.on('end', () => resolve()));
    streams.closeAll();
    await ended;
    expect(streams.openStreams).toBe(0);
  });

  it('100 idle subscribers cost little memory', async () => {
    const streams = t.app.get(EventStreamService);
    const open100 = async () => {
      const opened = [];
      for (let i = 0; i < 100; i++) opened.push(await stream(i % 2 ? org : other, '', {}, i % 3 ? 'admin' : 'approver'));
      return opened;
    };
    // A first hundred, opened and closed, so that what the first stream of a process allocates
    // once (compiled code, pooled connections' buffers, caches) and what earlier tests leave to be
    // freed are not counted: on a loaded CI machine they swung the figure by ±100 KiB a stream.
    for (const c of await open100()) c.close();
    open.splice(0);
    for (let i = 0; i < 100 && streams.openStreams > 0; i++) await new Promise((r) => setTimeout(r, 20));
    await new Promise((r) => setTimeout(r, 100));
    collectGarbage();
    collectGarbage();
    const before = process.memoryUsage();
    const clients = await open100();
    expect(streams.openStreams).toBe(100);
    collectGarbage();
    collectGarbage();
    const after = process.memoryUsage();
    // Client and server share this process: the figure holds both ends of 100 connections.
    const heapPerStream = (after.heapUsed - before.heapUsed) / 100;
    console.info(
      `100 idle event streams: heap +${((after.heapUsed - before.heapUsed) / 1024).toFixed(0)} KiB (${(heapPerStream / 1024).toFixed(1)} KiB each, client side included), rss +${((after.rss - before.rss) / 1024 / 1024).toFixed(1)} MiB`,
    );
    expect(heapPerStream).toBeLessThan(64 * 1024);
    // All of them still get what is written.
    await createAgent(org);
    await Promise.all(clients.filter((_, i) => i % 2).map((c) => c.waitFor((x) => x.events.length >= 1)));
  });

  (process.env.DATABASE_URL ? it : it.skip)(
    'a new stream sends nothing that had committed before it opened, even while an older transaction runs',
    async () => {
      // A transaction left running (anywhere on the server) holds the horizon back; an event
      // committed after it began is already history when the stream opens.
      await withTwoWriters(async (older, newer) => {
        const before = randomUUID();
        const during = randomUUID();
        await insertEvent(newer, before);
        const c = await stream(org);
        // Running when the stream opened, committed after: the stream's to send.
        await insertEvent(older, during);
        await older.query('COMMIT');
        const after = await createAgent(org);
        await c.waitFor((x) => x.events.length >= 2);
        await new Promise((r) => setTimeout(r, 300));
        expect(c.events.map((e) => e.event.target)).toEqual([during, after].map((id) => ({ type: 'agent', id })));
      });
    },
  );

  (process.env.DATABASE_URL ? it : it.skip)('opens a stream while several transactions are running, and sends what each commits after', async () => {
    // The snapshot lists every running transaction; with two of them the stream once failed to open.
    await withTwoWriters(async (older, newer) => {
      const third = new Client({ connectionString: t.db.url });
      await third.connect();
      try {
        await third.query('BEGIN');
        await third.query('SELECT pg_current_xact_id()');
        const before = randomUUID();
        await insertEvent(newer, before);
        const c = await stream(org);
        const fromOlder = randomUUID();
        const fromThird = randomUUID();
        await insertEvent(older, fromOlder);
        await insertEvent(third, fromThird);
        await third.query('COMMIT');
        await older.query('COMMIT');
        await c.waitFor((x) => x.events.length >= 2);
        await new Promise((r) => setTimeout(r, 300));
        // In transaction order (older began first), and nothing committed before the opening.
        expect(c.events.map((e) => e.event.target)).toEqual([fromOlder, fromThird].map((id) => ({ type: 'agent', id })));
      } finally {
        await third.end();
      }
    });
  });

  (process.env.DATABASE_URL ? it : it.skip)(
    'holds an event back until every older transaction has finished, so a resumed position never misses one',
    async () => {
      // Two writers on their own connections: the older transaction writes its event last.
      const c = await stream(org);
      await withTwoWriters(async (older, newer) => {
        const first = randomUUID();
        const second = randomUUID();
        await insertEvent(newer, second);
        // Committed, but the older transaction may still write before it: not yet handed out.
        await new Promise((r) => setTimeout(r, 600));
        expect(c.events).toHaveLength(0);
        await insertEvent(older, first);
        await older.query('COMMIT');
        await c.waitFor((x) => x.events.length >= 2);
        expect(c.events.map((e) => e.event.id)).toEqual([first, second]);
      });
    },
  );
});
