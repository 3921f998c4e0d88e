import Fastify, { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { AddressInfo, connect, Socket } from 'node:net';
import { until } from '../../test/support/until';
import { boundUnsentAnswers, UnsentAnswers } from '../common/answer-budget';
import { sendWebResponse, unreadAnswersRefusal } from './mcp-http';

/** Larger than what the kernel takes from a socket that is not read. */
const BIG = 16 * 1024 * 1024;

/** Asks for `path` on a socket of its own and reads nothing: the answer waits in the server. */
function unreadRequest(port: number, path: string, sockets: Socket[]): Promise<Socket> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1', () => {
      socket.pause();
      socket.write(`GET ${path} HTTP/1.1\r\nHost: x\r\n\r\n`);
      resolve(socket);
    });
    socket.on('error', () => undefined);
    sockets.push(socket);
  });
}

/** An SDK answer as a stream of the given chunks, the last one only once `release` is called. */
function sseAnswer(chunks: Uint8Array[], last?: Promise<Uint8Array>): Response {
  const body = new ReadableStream<Uint8Array>({
    async start(controller) {
      for (const c of chunks) controller.enqueue(c);
      if (last) controller.enqueue(await last);
      controller.close();
    },
  });
  return new Response(body, { status: 200, headers: { 'content-type': 'text/event-stream' } });
}

/**
 * Attack round 12, I-F2: an MCP answer is written to a hijacked reply, past Fastify's onSend, so
 * the node's budget of unsent answers (docs/security.md row 9d) never counted it: a `tools/list`
 * of an agent binding large MCP servers, or a large result, was held whole for a client that read
 * nothing, however many. sendWebResponse now asks the budget for each chunk.
 */
describe('sendWebResponse and the budget of unsent answers', () => {
  let app: FastifyInstance;
  let budget: UnsentAnswers;
  let port: number;
  const sockets: Socket[] = [];
  let releaseLast: (chunk: Uint8Array) => void = () => undefined;

  const send = (request: FastifyRequest, reply: FastifyReply, res: Response, headAtOnce: boolean) => {
    reply.hijack();
    return sendWebResponse(
      reply,
      res,
      'req-1',
      (size) => budget.admit(request, reply.raw, size),
      () => unreadAnswersRefusal(reply),
      headAtOnce,
    );
  };

  beforeAll(async () => {
    app = Fastify();
    budget = boundUnsentAnswers(app, () => 'one', BIG + BIG / 2, 1500);
    const big = new Uint8Array(BIG).fill(120);
    app.get('/list', (request, reply) => send(request, reply, sseAnswer([big]), false));
    app.get('/small', (request, reply) => send(request, reply, sseAnswer([new TextEncoder().encode('data: {}\n\n')]), false));
    app.get('/held', (request, reply) =>
      send(request, reply, sseAnswer([new TextEncoder().encode('data: {"progress":0}\n\n')], new Promise((r) => (releaseLast = r))), true),
    );
    await app.listen({ port: 0, host: '127.0.0.1' });
    port = (app.server.address() as AddressInfo).port;
  });
  afterAll(async () => {
    for (const s of sockets) s.destroy();
    await app.close();
  });

  it('counts a large answer nobody reads, answers the next 503 with Retry-After, and frees it at the send timeout', async () => {
    await unreadRequest(port, '/list', sockets);
    await until(
      async () => budget.held(),
      (held) => held === BIG,
    );
    const refused = await app.inject({ method: 'GET', url: '/list' });
    expect([refused.statusCode, refused.headers['retry-after'], refused.headers['x-request-id'], JSON.parse(refused.body).code]).toEqual([
      503,
      '1',
      'req-1',
      'service_unavailable',
    ]);
    expect(budget.held()).toBe(BIG);
    // Small answers never wait for room.
    const small = await app.inject({ method: 'GET', url: '/small' });
    expect([small.statusCode, small.body]).toEqual([200, 'data: {}\n\n']);
    await until(
      async () => budget.held(),
      (held) => held === 0,
    );
    const served = await app.inject({ method: 'GET', url: '/list' });
    expect([served.statusCode, served.body.length]).toEqual([200, BIG]);
  });

  it('closes an answer whose head went out when a later chunk does not fit', async () => {
    await unreadRequest(port, '/list', sockets);
    await until(
      async () => budget.held(),
      (held) => held === BIG,
    );
    const socket = await new Promise<Socket>((resolve) => {
      const s = connect(port, '127.0.0.1', () => resolve(s));
      s.on('error', () => undefined);
      sockets.push(s);
    });
    let received = '';
    socket.on('data', (d: Buffer) => (received += d.toString('latin1')));
    const closed = new Promise((r) => socket.once('close', r));
    socket.write('GET /held HTTP/1.1\r\nHost: x\r\n\r\n');
    // Its head and first (small) event are sent at once, as for a call held for a decision.
    await until(
      async () => received,
      (text) => text.includes('data: {"progress":0}'),
    );
    expect(received).toMatch(/^HTTP\/1\.1 200 /);
    releaseLast(new Uint8Array(BIG).fill(121));
    await closed;
    expect(received).not.toContain('yyyy');
    expect(budget.held()).toBe(BIG);
  });
});
