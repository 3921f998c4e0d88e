import type { FastifyInstance } from 'fastify';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

/** How often, while closing, connections that have become idle are closed. */
const IDLE_REAP_MS = 50;
/** The least time between two closings of idle connections to make room under the connection cap. */
const RECLAIM_INTERVAL_MS = 100;
/** How long a connection may take to send a request's head before the cap may close it to make room. */
export const HEAD_GRACE_MS = 1000;

/**
 * At most `max` connections at once; past it Node closes a new one unanswered. Without a cap one
 * client's idle connections filled the file-descriptor table, and the node could open nothing
 * else, not even a connection to its database. A refused connection also closes the idle ones
 * and those still sending a request's head past HEAD_GRACE_MS (each waiting for a request that
 * may never come), so the next client finds room: holding the node then takes requests in
 * flight, whose heads arrived, which the HTTP timeouts bound (app.factory.ts).
 */
export function capConnections(fastify: FastifyInstance, max: number): void {
  const server = fastify.server;
  server.maxConnections = max;
  // Since when each connection has waited for a request's head to arrive whole (its opening, or the
  // end of its last answer). Node does not count a connection with half a head as idle: 2,000 of
  // them, each re-opened when the headers timeout closed it, kept every other client out.
  const waiting = new Map<Socket, number>();
  server.on('connection', (socket: Socket) => {
    waiting.set(socket, Date.now());
    socket.once('close', () => waiting.delete(socket));
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
  });
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
