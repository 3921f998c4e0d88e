import { AsyncLocalStorage } from 'node:async_hooks';
import { connect, Socket } from 'node:net';
import { collectGarbage } from './support/gc';
import { createTestApp, TestApp } from './support/test-app';

/**
 * Closing the app (a node stopping, or a test's afterAll) answers what is in flight and then
 * lets go: a keep-alive connection whose answer is written after the close began must not keep
 * the close waiting for its 72-second keep-alive timeout.
 */
describe('closing the app', () => {
  let t: TestApp;
  let port: number;
  let closed: Promise<void> | undefined;

  beforeAll(async () => {
    t = await createTestApp();
    await t.app.listen(0, '127.0.0.1');
    port = Number(new URL(await t.app.getUrl()).port);
  });
  afterAll(() => closed ?? t.close());

  it('answers a request in flight, then closes its keep-alive connection and finishes', async () => {
    const body = JSON.stringify({ slug: 'closing', name: 'Closing' });
    const socket = await open(port);
    const received = collect(socket);
    // The server has read the head (Fastify routes it in this event): the request is in flight.
    // Closed before that, it would be a request arriving while closing, answered Connection: close.
    const inFlight = new Promise((resolve) => t.app.getHttpServer().once('request', resolve));
    // Headers and half the body: the request is in flight, so the close cannot count the
    // connection idle.
    socket.write(
      `POST /api/v1/orgs HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${t.adminToken}\r\n` +
        `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: keep-alive\r\n\r\n` +
        body.slice(0, 10),
    );

    await inFlight;
    closed = t.close();
    await untilRefused(port);
    socket.write(body.slice(10));

    // The close finishes well before the keep-alive timeout would have let the connection go.
    const outcome = await Promise.race([closed.then(() => 'closed'), new Promise((r) => setTimeout(() => r('still open'), 10_000).unref())]);
    expect(outcome).toBe('closed');
    const answer = await received.ended;
    expect(answer).toMatch(/^HTTP\/1\.1 201 /);
    expect(answer).toMatch(/\r\nconnection: keep-alive\r\n/i);
  });

  // What an app starts carries the async context it was started in, and an embedder's context
  // (a test framework's, a supervisor's) commonly holds the app itself. A monitor left running after
  // the close keeps that context, and so the whole closed app, in memory for the life of the
  // process: prom-client's default metrics did, and a Jest worker grew by tens of MB a test file.
  it('lets go of the context it was started in once closed: nothing it started is left running', async () => {
    expect(await collected(await inContextHoldingTheApp())).toBe(true);
  });
});

/** Starts, uses and closes an app inside an async context that holds it; answers a weak reference to that context. */
async function inContextHoldingTheApp(): Promise<WeakRef<object>> {
  const context = new AsyncLocalStorage<{ app?: TestApp }>();
  const held: { app?: TestApp } = {};
  await context.run(held, async () => {
    held.app = await createTestApp();
    await held.app.http.get('/metrics').expect(200);
    await held.app.close();
  });
  return new WeakRef(held);
}

/** Whether what `ref` points to is garbage-collected within a few full collections. */
async function collected(ref: WeakRef<object>): Promise<boolean> {
  for (let i = 0; i < 10 && ref.deref(); i++) {
    // Between collections, let what the close scheduled (sockets closing, timers cleared) run.
    await new Promise((r) => setTimeout(r, 20));
    collectGarbage();
  }
  return ref.deref() === undefined;
}

function open(port: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => resolve(socket));
    socket.once('error', reject);
  });
}

/** Everything the server sends, and a promise of it all once the server closes the connection. */
function collect(socket: Socket): { ended: Promise<string> } {
  let text = '';
  socket.setEncoding('utf8');
  socket.on('data', (chunk: string) => (text += chunk));
  const ended = new Promise<string>((resolve) => socket.once('close', () => resolve(text)));
  return { ended };
}

/** Resolves once the server has stopped accepting connections (its close has begun). */
async function untilRefused(port: number): Promise<void> {
  for (;;) {
    const refused = await new Promise<boolean>((resolve) => {
      const probe = connect(port, '127.0.0.1');
      probe.once('connect', () => {
        probe.destroy();
        resolve(false);
      });
      probe.once('error', () => resolve(true));
    });
    if (refused) return;
    await new Promise((r) => setTimeout(r, 10));
  }
}
