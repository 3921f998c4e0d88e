import { LATEST_PROTOCOL_VERSION } from '@modelcontextprotocol/sdk/types.js';
import http from 'node:http';
import { Socket } from 'node:net';
import { DataSource } from 'typeorm';
import { CORS_EXPOSED_HEADERS } from '../src/app.factory';
import { CredentialWatch } from '../src/auth/credential-watch.service';
import { EventStreamService } from '../src/events/event-stream.service';
import { PositionSeals } from '../src/secrets/position-seals';
import { RunsRepository } from '../src/runs/runs.repository';
import { RunsService } from '../src/runs/runs.service';
import { RunFixturesModule } from './fixtures/run-fixtures.module';
import { parseAnswer, rawClient } from './support/raw-http';
import { ScriptedModel, sequence, startScriptedModel } from './support/scripted-model';
import { SseClient } from './support/sse-client';
import { bearer, createOrg, createTestApp, TestApp, TestOrg } from './support/test-app';
import { until } from './support/until';
import { testRunsConfig } from './support/runs-config';

/**
 * The streaming answers (`GET /events`, `GET /runs/{id}/events`, MCP) against an attacker who
 * hangs up early, opens many at once, reads nothing, asks with HEAD or resumes from a position
 * never sent, and against browsers (CORS) on them. Each test failed on the code before its fix.
 */
describe('streams an attacker cannot hold open (e2e)', () => {
  const ORIGIN = 'http://localhost:6274';
  let t: TestApp;
  let model: ScriptedModel;
  let port: number;
  let org: TestOrg;
  let providerId: string;
  let streams: EventStreamService;
  let slugs = 0;
  const sockets: Socket[] = [];
  const clients: SseClient[] = [];

  beforeAll(async () => {
    model = await startScriptedModel(sequence({ text: 'unused' }));
    t = await createTestApp({
      imports: [RunFixturesModule],
      config: {
        corsOrigins: [ORIGIN],
        runs: testRunsConfig(),
      },
    });
    await t.app.listen(0, '127.0.0.1');
    port = (t.app.getHttpServer().address() as { port: number }).port;
    streams = t.app.get(EventStreamService);
    org = await createOrg(t);
    const res = await t.http
      .post('/api/v1/model-providers')
      .set(...bearer(org.keys.admin))
      .send({ name: 'scripted', kind: 'openai-compatible', baseUrl: model.url })
      .expect(201);
    providerId = res.body.id;
    // Starting an app with a fresh database can be slow on a busy machine.
  }, 180_000);
  afterEach(async () => {
    jest.restoreAllMocks();
    for (const s of sockets.splice(0)) s.destroy();
    for (const c of clients.splice(0)) c.close();
    await until(
      async () => streams.openStreams,
      (n) => n === 0,
      10_000,
      20,
    );
  });
  afterAll(async () => {
    await t.close();
    await model.close();
  });

  async function agent(): Promise<string> {
    const a = await t.http
      .post('/api/v1/agents')
      .set(...bearer(org.keys.builder))
      .send({ slug: `streams-${++slugs}`, name: `Streams ${slugs}` })
      .expect(201);
    await t.http
      .put(`/api/v1/agents/${a.body.id}/draft`)
      .set(...bearer(org.keys.builder))
      .send({ instructions: 'x', capabilities: [{ id: 'fx-run-tools' }], model: { provider: providerId, name: 'scripted-1' } })
      .expect(200);
    await t.http
      .post(`/api/v1/agents/${a.body.id}/publish`)
      .set(...bearer(org.keys.builder))
      .expect(201);
    return a.body.id;
  }

  /** A run of `org` that the script brings to `status` within its wait. */
  async function runUntil(script: Parameters<ScriptedModel['setScript']>[0], status: string): Promise<string> {
    const agentId = await agent();
    model.setScript(script);
    const res = await t.http
      .post(`/api/v1/agents/${agentId}/runs`)
      .set(...bearer(org.keys.agent))
      .set('Prefer', 'wait=10')
      .send({ input: 'x' })
      .expect(201);
    expect(res.body.status).toBe(status);
    return res.body.id;
  }
  /** A run that waits for approval: its event stream stays open. */
  const waitingRun = () =>
    runUntil(sequence({ toolCalls: [{ id: 's', name: 'send_message', arguments: '{"to":"ann@example.com"}' }] }, { text: 'Sent.' }), 'waiting_for_approval');
  const finishedRun = () => runUntil(sequence({ text: 'Done.' }), 'succeeded');

  /** A request written on a socket of its own; what comes back is collected. */
  const send = (method: string, path: string, token: string) =>
    rawClient(port, `${method} ${path} HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${token}\r\nAccept: text/event-stream\r\n\r\n`, sockets);
  const statusOf = (text: string) => parseAnswer(text).status;

  /**
   * Holds every call of `method` until `release()`: requests wait inside the handler, between
   * awaits, for as long as the test needs. `settled()` resolves once every held call has returned
   * and what its caller did next (up to its next await) has run.
   */
  function hold<T extends object>(proto: T, method: keyof T & string) {
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const original = proto[method] as (...args: unknown[]) => Promise<unknown>;
    const returned: Promise<unknown>[] = [];
    const spy = jest.spyOn(proto, method as never).mockImplementation(function (this: unknown, ...args: unknown[]) {
      const p = held.then(() => original.apply(this, args));
      returned.push(p);
      return p as never;
    } as never);
    return {
      calls: () => spy.mock.calls.length,
      release,
      async settled() {
        await Promise.allSettled(returned);
        await new Promise((r) => setImmediate(r));
      },
    };
  }

  /** Resolves, for each request to `path` from now on, when the server sees its client gone. */
  function serverSideCloses(path: string): Promise<void>[] {
    const closes: Promise<void>[] = [];
    const server = t.app.getHttpServer() as http.Server;
    const listener = (req: http.IncomingMessage, res: http.ServerResponse) => {
      if (req.url === path) closes.push(new Promise((resolve) => res.once('close', () => resolve())));
    };
    server.on('request', listener);
    afterThis.push(() => server.off('request', listener));
    return closes;
  }
  const afterThis: (() => void)[] = [];
  afterEach(() => afterThis.splice(0).forEach((f) => f()));

  describe('GET /events', () => {
    it('a client that hangs up while its stream is being opened leaves no stream behind', async () => {
      const o = await createOrg(t);
      const head = hold(EventStreamService.prototype, 'head');
      const closes = serverSideCloses('/api/v1/events');
      const hungUp = Array.from({ length: 20 }, () => send('GET', '/api/v1/events', o.keys.admin));
      await until(
        async () => head.calls(),
        (n) => n === 20,
      );
      for (const c of hungUp) c.socket.destroy();
      await Promise.all(closes);
      head.release();
      await head.settled();
      // They were left open, each holding one of the organization's 256 slots until its next event.
      expect(streams.openStreams).toBe(0);
      const c = await SseClient.open(`http://127.0.0.1:${port}/api/v1/events`, { authorization: `Bearer ${o.keys.admin}` });
      clients.push(c);
      await c.waitFor((x) => x.lastId !== undefined);
    });

    it('admits no more than 256 streams of one organization, however many ask at once', async () => {
      const o = await createOrg(t);
      const head = hold(EventStreamService.prototype, 'head');
      const asking = Array.from({ length: 270 }, () => send('GET', '/api/v1/events', o.keys.admin));
      const refused = () => asking.filter((a) => statusOf(a.received()) === 429).length;
      // Every request has been admitted (and waits for its start position) or refused.
      await until(
        async () => head.calls() + refused(),
        (n) => n === 270,
        30_000,
      );
      expect(refused()).toBe(14);
      head.release();
      const statuses = await until(
        async () => asking.map((a) => statusOf(a.received())),
        (s) => s.every((x) => x !== 0),
        30_000,
      );
      expect(statuses.filter((s) => s === 200)).toHaveLength(256);
      expect(streams.openStreams).toBe(256);
      expect(asking.find((a) => statusOf(a.received()) === 429)!.received()).toMatch(/retry-after: 5/i);
    });

    it('HEAD answers with the headers at once and opens no stream', async () => {
      const asked = send('HEAD', '/api/v1/events', org.keys.admin);
      const answer = await until(
        async () => asked.received(),
        (r) => r.includes('\r\n\r\n'),
        5_000,
        20,
      );
      expect(statusOf(answer)).toBe(200);
      expect(answer).toMatch(/content-type: text\/event-stream/i);
      expect(answer).toMatch(/x-request-id: /i);
      expect(streams.openStreams).toBe(0);
    });

    it('refuses a Last-Event-ID no stream has sent (past the current transaction), and takes the opening id of a stream that just opened', async () => {
      const get = (id: string) =>
        SseClient.open(`http://127.0.0.1:${port}/api/v1/events`, { authorization: `Bearer ${org.keys.admin}`, 'last-event-id': id }).then(
          (c) => {
            clients.push(c);
            return { status: 200, body: '' };
          },
          (err: { status: number; body: string }) => err,
        );
      const [{ xmax }] = await t.app.get(DataSource).query(`SELECT pg_snapshot_xmax(pg_current_snapshot())::text AS xmax`);
      // Ids are sealed, so no client makes these up; sealed with the organization's key, as a
      // leaked secret or a bug would, they are still refused.
      const seal = t.app.get(PositionSeals).events(org.id);
      for (const never of [seal.seal(9999999999n, 0n), seal.seal(BigInt(xmax) + 1_000_000n, 0n), seal.seal(BigInt(xmax) + 1_000_000n, 7n), '9999999999-0']) {
        const res = await get(never);
        expect(res.status).toBe(400);
        expect(JSON.parse(res.body)).toMatchObject({ code: 'invalid_request', errors: [{ path: 'Last-Event-ID', code: 'invalid_header' }] });
      }
      // Nothing written in between: the opening id is the current xmax itself, and is taken back.
      const c = await SseClient.open(`http://127.0.0.1:${port}/api/v1/events`, { authorization: `Bearer ${org.keys.admin}` });
      clients.push(c);
      await c.waitFor((x) => x.lastId !== undefined);
      c.close();
      expect((await get(c.lastId!)).status).toBe(200);
    });
  });

  describe('GET /runs/{id}/events', () => {
    it('a client that hangs up while its stream is being opened leaves nothing reading the run', async () => {
      const runId = await waitingRun();
      const path = `/api/v1/runs/${runId}/events`;
      const visible = hold(RunsService.prototype, 'assertVisible');
      const closes = serverSideCloses(path);
      const streaming: Promise<unknown>[] = [];
      const stream = RunsService.prototype.stream;
      jest.spyOn(RunsService.prototype, 'stream').mockImplementation(function (this: RunsService, ...args) {
        const p = stream.apply(this, args);
        streaming.push(p);
        return p;
      });
      const reads = jest.spyOn(RunsRepository.prototype, 'events');
      const hungUp = Array.from({ length: 20 }, () => send('GET', path, org.keys.viewer));
      await until(
        async () => visible.calls(),
        (n) => n === 20,
      );
      for (const c of hungUp) c.socket.destroy();
      await Promise.all(closes);
      visible.release();
      await visible.settled();
      // Each read the run twice a second until it was cancelled.
      await expect(Promise.race([Promise.all(streaming).then(() => 'ended'), new Promise((r) => setTimeout(() => r('still reading'), 5_000))])).resolves.toBe(
        'ended',
      );
      const before = reads.mock.calls.length;
      await new Promise((r) => setTimeout(r, 1_200));
      expect(reads.mock.calls.length).toBe(before);
    });

    it('reads the run only as fast as the client takes it, and still delivers every event once', async () => {
      const ds = t.app.get(DataSource);
      // Just below a power of ten, so the run's sequence numbers gain a digit midway: ordered by
      // the text of seq (its output column shadowed the table's), 1000 came before 999.
      await ds.query(`SELECT setval(pg_get_serial_sequence('run_event', 'seq'), power(10, length(COALESCE(max(seq), 0)::text))::bigint - 5) FROM run_event`);
      const runId = await finishedRun();
      // About 38 MB of events: far more than the sockets' buffers and one batch (500 events) hold.
      await ds.query(
        `INSERT INTO run_event (org_id, run_id, type, data)
         SELECT $1, $2, 'model.completed', jsonb_build_object('n', g, 'pad', repeat('x', 32000)) FROM generate_series(1, 1200) AS g`,
        [org.id, runId],
      );
      const [{ total }] = await ds.query(`SELECT count(*)::int AS total FROM run_event WHERE run_id = $1`, [runId]);
      let fetched = 0;
      const events = RunsRepository.prototype.events;
      jest.spyOn(RunsRepository.prototype, 'events').mockImplementation(async function (this: RunsRepository, ...args) {
        const read = await events.apply(this, args);
        if (args[1] === runId) fetched += read.events.length;
        return read;
      });
      const response = await new Promise<http.IncomingMessage>((resolve, reject) => {
        const req = http.get(
          { host: '127.0.0.1', port, path: `/api/v1/runs/${runId}/events`, headers: { authorization: `Bearer ${org.keys.viewer}` } },
          resolve,
        );
        req.on('error', reject);
        afterThis.push(() => req.destroy());
      });
      expect(response.statusCode).toBe(200);
      // The client reads nothing: the server reads until the sockets are full, then waits.
      let last = -1;
      let still = 0;
      await until(
        async () => fetched,
        (n) => {
          still = n === last ? still + 1 : 0;
          last = n;
          return n === total || (n > 0 && still >= 5);
        },
        30_000,
      );
      console.info(`a client that reads nothing: ${fetched} of ${total} run events read from the database`);
      expect(fetched).toBeLessThan(total);
      const text = await new Promise<string>((resolve, reject) => {
        let body = '';
        response.setEncoding('utf8');
        response.on('data', (c: string) => (body += c));
        response.on('end', () => resolve(body));
        response.on('error', reject);
      });
      const seal = t.app.get(PositionSeals).run(org.id, runId);
      const ids = [...text.matchAll(/^id: (\S+)$/gm)].map((m) => seal.open(m[1])![0]);
      expect(ids).toHaveLength(total);
      expect(ids.every((id, i) => i === 0 || id > ids[i - 1])).toBe(true);
    });

    it('admits no more than 256 streams of one organization', async () => {
      const runId = await finishedRun();
      // Streams that stay open without reading the database.
      jest
        .spyOn(RunsService.prototype, 'stream')
        .mockImplementation((_o, _r, _a, _send, _keepAlive, gone) => new Promise<void>((resolve) => gone.addEventListener('abort', () => resolve())));
      const open = (o: TestOrg) => SseClient.open(`http://127.0.0.1:${port}/api/v1/runs/${runId}/events`, { authorization: `Bearer ${o.keys.viewer}` });
      const opened = await Promise.all(Array.from({ length: 256 }, () => open(org)));
      clients.push(...opened);
      const refused = await open(org).then(
        (c) => {
          clients.push(c);
          return { status: 200, body: '{}' };
        },
        (err: { status: number; body: string }) => err,
      );
      expect(refused.status).toBe(429);
      expect(JSON.parse(refused.body).code).toBe('rate_limited');
      // A stream that ends gives its slot back.
      opened[0].close();
      const again = await until(
        () =>
          open(org).then(
            (c) => (clients.push(c), 200),
            (err: { status: number }) => err.status,
          ),
        (s) => s === 200,
        10_000,
      );
      expect(again).toBe(200);
    });

    it('HEAD answers with the headers at once, while the run waits', async () => {
      const runId = await waitingRun();
      const asked = send('HEAD', `/api/v1/runs/${runId}/events`, org.keys.viewer);
      const answer = await until(
        async () => asked.received(),
        (r) => r.includes('\r\n\r\n'),
        5_000,
        20,
      );
      expect(statusOf(answer)).toBe(200);
      expect(answer).toMatch(/content-type: text\/event-stream/i);
    });

    it("ends when the reader's key is revoked, while the run still waits", async () => {
      const runId = await waitingRun();
      const key = (
        await t.http
          .post(`/api/v1/orgs/${org.id}/api-keys`)
          .set(...bearer(org.keys.admin))
          .send({ name: 'run reader', roles: ['viewer'] })
          .expect(201)
      ).body as { id: string; token: string };
      const { received } = send('GET', `/api/v1/runs/${runId}/events`, key.token);
      await until(
        async () => received(),
        (text) => text.includes('event: run.waiting'),
      );
      await t.http
        .delete(`/api/v1/orgs/${org.id}/api-keys/${key.id}`)
        .set(...bearer(org.keys.admin))
        .expect(204);
      // The next heartbeat's check, at once.
      await t.app.get(CredentialWatch).check();
      // The chunked answer's last chunk: the stream ended (the connection may stay open).
      await until(
        async () => received(),
        (text) => text.endsWith('\r\n0\r\n\r\n'),
        5_000,
      );
      expect(statusOf(received())).toBe(200);
      const run = await t.http
        .get(`/api/v1/runs/${runId}`)
        .set(...bearer(org.keys.viewer))
        .expect(200);
      expect(run.body.status).toBe('waiting_for_approval');
    });

    it('answers an allowed origin with CORS headers and a request id', async () => {
      const runId = await finishedRun();
      const res = await new Promise<http.IncomingMessage>((resolve, reject) => {
        const req = http.get(
          { host: '127.0.0.1', port, path: `/api/v1/runs/${runId}/events`, headers: { authorization: `Bearer ${org.keys.viewer}`, origin: ORIGIN } },
          resolve,
        );
        req.on('error', reject);
      });
      res.resume();
      expect(res.statusCode).toBe(200);
      expect(res.headers['access-control-allow-origin']).toBe(ORIGIN);
      expect(res.headers['access-control-expose-headers']).toBe(CORS_EXPOSED_HEADERS);
      expect(res.headers.vary).toMatch(/Origin/);
      expect(res.headers['x-request-id']).toBeDefined();
    });
  });

  describe('MCP', () => {
    it('answers an allowed origin with CORS headers, and copies no hop-by-hop header of the SDK', async () => {
      const agentId = await agent();
      const path = `/api/v1/agents/${agentId}/mcp`;
      const res = await t.http
        .post(path)
        .set('Origin', ORIGIN)
        .set('Connection', 'close')
        .set('Accept', 'application/json, text/event-stream')
        .set('Content-Type', 'application/json')
        .set(...bearer(org.keys.agent))
        .send(
          JSON.stringify({
            jsonrpc: '2.0',
            id: 1,
            method: 'initialize',
            params: { protocolVersion: LATEST_PROTOCOL_VERSION, capabilities: {}, clientInfo: { name: 'browser', version: '1' } },
          }),
        )
        .expect(200);
      expect(res.headers['access-control-allow-origin']).toBe(ORIGIN);
      expect(res.headers.vary).toMatch(/Origin/);
      expect(res.headers['x-request-id']).toBeDefined();
      // The client asked to close: an answer that says keep-alive contradicts what the server does.
      expect(res.headers.connection).toBe('close');
      expect(res.headers['keep-alive']).toBeUndefined();
      // What browser MCP clients send; the endpoint is stateless and issues no session id.
      expect(res.headers['mcp-session-id']).toBeUndefined();
      const preflight = await t.http
        .options(path)
        .set('Origin', ORIGIN)
        .set('Access-Control-Request-Method', 'POST')
        .set('Access-Control-Request-Headers', 'authorization,content-type,mcp-protocol-version,mcp-method,mcp-name,last-event-id')
        .expect(204);
      expect(preflight.headers['access-control-allow-headers'].toLowerCase().split(/,\s*/)).toEqual(
        expect.arrayContaining(['authorization', 'content-type', 'mcp-protocol-version', 'mcp-method', 'mcp-name', 'last-event-id']),
      );
    });

    it('answers a transport failure with a problem document a browser can read (CORS kept)', async () => {
      const agentId = await agent();
      // A header the web Request cannot hold: the request fails before the SDK has it, after the
      // reply was hijacked (Fastify's own error answer, with its CORS hook, is out of the way).
      const append = Headers.prototype.append;
      const spy = jest.spyOn(Headers.prototype, 'append').mockImplementation(function (this: Headers, name: string, value: string) {
        if (name === 'x-break') throw new TypeError('invalid header value');
        return append.call(this, name, value);
      });
      try {
        const res = await t.http
          .post(`/api/v1/agents/${agentId}/mcp`)
          .set('Origin', ORIGIN)
          .set('Accept', 'application/json, text/event-stream')
          .set('Content-Type', 'application/json')
          .set('x-break', 'x')
          .set(...bearer(org.keys.agent))
          .send(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} }));
        expect(spy).toHaveBeenCalledWith('x-break', 'x');
        expect(res.status).toBe(500);
        expect(res.headers['content-type']).toBe('application/problem+json');
        expect(JSON.parse(res.text)).toMatchObject({ status: 500, code: 'internal_error' });
        expect(res.headers['access-control-allow-origin']).toBe(ORIGIN);
        expect(res.headers['access-control-expose-headers']).toBe(CORS_EXPOSED_HEADERS);
        expect(res.headers['x-request-id']).toBeDefined();
      } finally {
        spy.mockRestore();
      }
    });
  });
});
