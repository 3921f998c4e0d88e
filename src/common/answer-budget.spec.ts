import Fastify, { FastifyInstance } from 'fastify';
import { AddressInfo, connect, Socket } from 'node:net';
import { until } from '../../test/support/until';
import { boundUnsentAnswers } from './answer-budget';

/** Asks for `path` on a socket of its own and reads nothing: the answer waits in the server. */
function unreadRequest(port: number, path: string, sockets: Socket[], owner = 'one'): Promise<void> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1', () => {
      socket.pause();
      socket.write(`GET ${path} HTTP/1.1\r\nHost: x\r\nX-Owner: ${owner}\r\n\r\n`);
      resolve();
    });
    socket.on('error', () => undefined);
    sockets.push(socket);
  });
}

describe('boundUnsentAnswers', () => {
  const BIG = 16 * 1024 * 1024;
  let app: FastifyInstance;
  let budget: { held: () => number };
  let port: number;
  const sockets: Socket[] = [];

  beforeAll(async () => {
    app = Fastify();
    budget = boundUnsentAnswers(app, () => 'one', BIG + BIG / 2, 1500);
    const big = 'x'.repeat(BIG);
    app.get('/big', async () => big);
    app.get('/small', async () => 'ok');
    await app.listen({ port: 0, host: '127.0.0.1' });
    port = (app.server.address() as AddressInfo).port;
  });
  afterAll(async () => {
    for (const s of sockets) s.destroy();
    await app.close();
  });

  it('holds large unread answers up to the bound, refuses the next 503 with Retry-After, and frees a stalled one at the send timeout', async () => {
    await unreadRequest(port, '/big', sockets);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(budget.held()).toBe(BIG);
    const refused = await app.inject({ method: 'GET', url: '/big' });
    expect([refused.statusCode, refused.headers['retry-after'], JSON.parse(refused.body).code]).toEqual([503, '1', 'service_unavailable']);
    // Small answers never wait for room.
    expect((await app.inject({ method: 'GET', url: '/small' })).statusCode).toBe(200);
    // The reader that took nothing is cut at the send timeout, and its answer's bytes given back.
    await until(
      async () => budget.held(),
      (held) => held === 0,
    );
    const served = await app.inject({ method: 'GET', url: '/big' });
    expect([served.statusCode, served.body.length]).toEqual([200, BIG]);
  });
});

describe('boundUnsentAnswers past half its bound', () => {
  // Larger than what the kernel takes from a socket that is not read.
  const ANSWER = 16 * 1024 * 1024;
  let app: FastifyInstance;
  let budget: { held: () => number };
  let port: number;
  const sockets: Socket[] = [];

  beforeAll(async () => {
    app = Fastify();
    // Eight answers in all; one owner's share is one of them, once four are held.
    budget = boundUnsentAnswers(app, (request) => String(request.headers['x-owner']), 8 * ANSWER, 60_000);
    const answer = 'x'.repeat(ANSWER);
    app.get('/big', async () => answer);
    await app.listen({ port: 0, host: '127.0.0.1' });
    port = (app.server.address() as AddressInfo).port;
  });
  afterAll(async () => {
    for (const s of sockets) s.destroy();
    await app.close();
  });

  const ask = (owner: string) => app.inject({ method: 'GET', url: '/big', headers: { 'x-owner': owner } });

  it('gives one owner no more than its share, and keeps the rest for the others', async () => {
    // One organization's clients read nothing: it takes half the bound, and one more past it.
    for (let i = 0; i < 5; i++) await unreadRequest(port, '/big', sockets, 'greedy');
    await until(
      async () => budget.held(),
      (held) => held === 5 * ANSWER,
    );
    const refused = await ask('greedy');
    expect([refused.statusCode, refused.headers['retry-after'], JSON.parse(refused.body).code]).toEqual([503, '1', 'service_unavailable']);
    // Before this, it could take all eight and every other organization's answer was refused.
    for (const other of ['second', 'third']) expect((await ask(other)).body.length).toBe(ANSWER);
    expect(budget.held()).toBe(5 * ANSWER);
    for (const s of sockets.splice(0)) s.destroy();
    await until(
      async () => budget.held(),
      (held) => held === 0,
    );
    expect((await ask('greedy')).statusCode).toBe(200);
  });
});
