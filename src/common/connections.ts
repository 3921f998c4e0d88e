import type { FastifyInstance, FastifyReply } from 'fastify';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

/** How often, while closing, connections that have become idle are closed. */
const IDLE_REAP_MS = 50;
/** The least time between two closings of idle connections to make room under the connection cap. */
const RECLAIM_INTERVAL_MS = 100;
/** How long a connection may take to send a request's head before the cap may close it to make room. */
export const HEAD_GRACE_MS = 1000;
/** Likewise for a body read before its credential was checked: a megabyte takes a second on a slow link. */
export const BODY_GRACE_MS = 5000;

/**
 * At most `max` connections at once; past it Node closes a new one unanswered. Without a cap one
 * client's idle connections filled the file-descriptor table, and the node could open nothing
 * else, not even a connection to its database. A refused connection also closes the idle ones
 * and those still sending a request's head past HEAD_GRACE_MS (each waiting for a request that
 * may never come), so the next client finds room: holding the node then takes requests in
 * flight, whose heads arrived, which the HTTP timeouts bound (app.factory.ts).
 *
 * Bodies too: a made-up token with a body sent a byte a second held a connection for the whole
 * request timeout, and 2,000 of them kept every other client out. Past half the cap a request's
 * credential is checked before its body is read (auth/anonymous-requests.ts), and a refused
 * connection also closes the requests reading a body unchecked for more than BODY_GRACE_MS.
 */
export function capConnections(fastify: FastifyInstance, max: number): ConnectionCap {
  const server = fastify.server;
  server.maxConnections = max;
  let open = 0;
  // Since when each request reading a body whose credential is not yet checked has been reading it.
  const unchecked = new Map<Socket, { since: number }>();
  const checked = (socket: Socket | null, reading: { since: number }) => {
    if (socket && unchecked.get(socket) === reading) unchecked.delete(socket);
  };
  const reads = new WeakMap<FastifyReply, { since: number }>();
  // The body is read whole: the guard checks its credential next.
  fastify.addHook('preValidation', (request, reply, done) => {
    const reading = reads.get(reply);
    if (reading) checked(request.raw.socket, reading);
    done();
  });
  // Since when each connection has waited for a request's head to arrive whole (its opening, or the
  // end of its last answer). Node does not count a connection with half a head as idle: 2,000 of
  // them, each re-opened when the headers timeout closed it, kept every other client out.
  const waiting = new Map<Socket, number>();
  server.on('connection', (socket: Socket) => {
    open += 1;
    waiting.set(socket, Date.now());
    socket.once('close', () => {
      open -= 1;
      waiting.delete(socket);
    });
  });
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    const socket = req.socket;
    waiting.delete(socket);
    res.once('finish', () => {
      if (!socket.destroyed) waiting.set(socket, Date.now());
    });
  });
  let reclaimedAt = 0;
  server.on('drop', () => {
    // A burst of refusals walks the connections once, not once each.
    if (Date.now() - reclaimedAt < RECLAIM_INTERVAL_MS) return;
    reclaimedAt = Date.now();
    server.closeIdleConnections();
    // And those still sending a head after HEAD_GRACE_MS: a client's head takes milliseconds.
    const before = reclaimedAt - HEAD_GRACE_MS;
    for (const [socket, since] of waiting) if (since <= before) socket.destroy();
    const slow = reclaimedAt - BODY_GRACE_MS;
    for (const [socket, { since }] of unchecked) if (since <= slow) socket.destroy();
  });
  return {
    underPressure: () => open > max / 2,
    readsBodyUnchecked(reply) {
      const socket = reply.raw.socket;
      if (!socket) return;
      const reading = { since: Date.now() };
      unchecked.set(socket, reading);
      reads.set(reply, reading);
      // A body refused, or a client gone mid-body.
      reply.raw.once('close', () => checked(socket, reading));
    },
  };
}

export interface ConnectionCap {
  /** More than half the cap is open: a request's credential is checked before its body is read. */
  underPressure(): boolean;
  /** The request's body is read before its credential is checked: the cap may close it past BODY_GRACE_MS. */
  readsBodyUnchecked(reply: FastifyReply): void;
}

/**
 * Closing lets requests in flight finish, but Node closes idle keep-alive connections only once,
 * when the close begins: a connection whose answer is written after that stays open, idle, until
 * its keep-alive timeout (HTTP_KEEP_ALIVE_TIMEOUT_MS), and the close waits for it. So while closing, idle connections
 * are closed as they appear. (A node B in CI waited out a whole test hook this way.)
 */
export function reapIdleConnectionsWhileClosing(fastify: FastifyInstance): void {
  let reaper: NodeJS.Timeout | undefined;
  fastify.addHook('preClose', (done) => {
    const server = fastify.server;
    reaper = setInterval(() => server.closeIdleConnections(), IDLE_REAP_MS);
    reaper.unref();
    done();
  });
  fastify.addHook('onClose', (_instance, done) => {
    clearInterval(reaper);
    done();
  });
}
