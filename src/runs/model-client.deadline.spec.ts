import { createServer, Server } from 'node:http';
import { AddressInfo, createServer as createTcpServer, Socket } from 'node:net';
import { testConfig } from '../../test/support/test-app';
import { EgressService } from '../egress/egress.service';
import { ModelError, OpenAiCompatibleModel, RetryPolicy } from './model-client';

const chunk = (content: string, finish: string | null = null) =>
  `data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', created: 0, model: 'm', choices: [{ index: 0, delta: { content }, finish_reason: finish }] })}\n\n`;

/**
 * A provider over loopback that answers its headers at once and then: an SSE comment every 50 ms
 * forever (`/stalls`), or an answer spread over `ms` milliseconds (`/slow`). `requests` settles, per
 * request, when the server side of its socket closes.
 */
async function provider(): Promise<{ server: Server; base: string; requests: Array<Promise<number>> }> {
  const requests: Array<Promise<number>> = [];
  const server = createServer((req, res) => {
    const at = Date.now();
    let open = true;
    requests.push(new Promise((resolve) => req.socket.once('close', () => ((open = false), resolve(Date.now() - at)))));
    req.resume();
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.flushHeaders();
    if (req.url!.startsWith('/stalls/')) {
      const tick = setInterval(() => (open ? res.write(': still thinking\n\n') : clearInterval(tick)), 50);
      return;
    }
    res.write(chunk('one '));
    setTimeout(() => res.end(chunk('two', 'stop') + 'data: [DONE]\n\n'), 500);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, requests };
}

describe('a model call has a deadline over its whole streamed answer', () => {
  let p: Awaited<ReturnType<typeof provider>>;
  let egress: EgressService;
  const sleep = async () => undefined;
  const req = { model: 'm', messages: [{ role: 'user' as const, content: 'hi' }], tools: [] };
  const model = (path: string, policy: Partial<RetryPolicy> = {}) =>
    new OpenAiCompatibleModel(
      'p',
      `${p.base}${path}`,
      'k',
      (url, init) => egress.fetch(url, init),
      {
        retries: 0,
        baseDelayMs: 1,
        maxDelayMs: 1,
        timeoutMs: 300,
        ...policy,
      },
      sleep,
    );

  beforeAll(async () => {
    p = await provider();
    // EGRESS_TIMEOUT_MS below the model's: what bounds a model's stream is RUN_MODEL_TIMEOUT_MS.
    egress = new EgressService(testConfig({ egress: { allowedHosts: ['127.0.0.1'], connectTimeoutMs: 1000, requestTimeoutMs: 200 } }));
  });
  afterAll(async () => {
    await egress.onModuleDestroy();
    p.server.closeAllConnections();
    await new Promise((r) => p.server.close(r));
  });

  it('a provider that sends headers then only comments fails the call as a retryable model_error, each attempt closing its socket', async () => {
    const before = p.requests.length;
    const started = Date.now();
    const err = await model('/stalls/v1', { retries: 1 })
      .complete(req)
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ModelError);
    expect(err).toMatchObject({ code: 'model_error', retryable: true, message: expect.stringMatching(/did not finish its answer within 300 ms/) });
    expect(Date.now() - started).toBeLessThan(2500);
    const attempts = p.requests.slice(before);
    expect(attempts).toHaveLength(2);
    for (const closedAfter of await Promise.all(attempts)) expect(closedAfter).toBeLessThan(1500);
  });

  it("a cancel of the run is not the deadline: not retried, and the stream's socket is closed", async () => {
    const before = p.requests.length;
    const cancel = new AbortController();
    setTimeout(() => cancel.abort(), 100);
    const err = await model('/stalls/v1', { retries: 3, timeoutMs: 5000 })
      .complete({ ...req, signal: cancel.signal })
      .catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'model_error', retryable: false, message: 'The model call was aborted.' });
    expect(p.requests.length - before).toBe(1);
    expect(await p.requests.at(-1)!).toBeLessThan(1500);
  });

  it('a provider that takes the connection and sends no headers gives up the attempt after EGRESS_TIMEOUT_MS, not the model timeout', async () => {
    // What a hung server does: its run's slot is held for EGRESS_TIMEOUT_MS per attempt, not RUN_MODEL_TIMEOUT_MS.
    const sockets: Socket[] = [];
    // Per request (a socket that sent one: the client may open a spare that sends nothing), when its socket closed.
    const closed: Array<Promise<number>> = [];
    const silent = createTcpServer((socket) => {
      const at = Date.now();
      sockets.push(socket);
      socket.once('data', () => closed.push(new Promise((resolve) => socket.once('close', () => resolve(Date.now() - at)))));
      socket.resume();
    });
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    try {
      const started = Date.now();
      const err = await new OpenAiCompatibleModel(
        'p',
        `http://127.0.0.1:${(silent.address() as AddressInfo).port}/v1`,
        'k',
        (url, init) => egress.fetch(url, init),
        { retries: 1, baseDelayMs: 1, maxDelayMs: 1, timeoutMs: 10_000 },
        sleep,
      )
        .complete(req)
        .catch((e: unknown) => e);
      expect(err).toMatchObject({ code: 'model_error', retryable: true, message: expect.stringMatching(/could not be reached/) });
      expect(Date.now() - started).toBeLessThan(2500);
      expect(closed).toHaveLength(2);
      for (const closedAfter of await Promise.all(closed)) expect(closedAfter).toBeLessThan(1500);
    } finally {
      sockets.forEach((s) => s.destroy());
      await new Promise((r) => silent.close(r));
    }
  });

  it('an answer streamed for longer than EGRESS_TIMEOUT_MS but within the model timeout is read whole', async () => {
    await expect(model('/slow/v1', { timeoutMs: 3000 }).complete(req)).resolves.toMatchObject({ content: 'one two', finishReason: 'stop' });
  });
});
