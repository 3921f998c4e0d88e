import type { FastifyInstance } from 'fastify';

/** How often, while closing, connections that have become idle are closed. */
const IDLE_REAP_MS = 50;
/** The least time between two closings of idle connections to make room under the connection cap. */
const RECLAIM_INTERVAL_MS = 100;

/**
 * At most `max` connections at once; past it Node closes a new one unanswered. Without a cap one
 * client's idle connections filled the file-descriptor table, and the node could open nothing
 * else, not even a connection to its database. A refused connection also closes the idle ones
 * (waiting for a request that may never come), so the next client finds room: holding the node
 * then takes requests in flight, which the HTTP timeouts bound (app.factory.ts).
 */
export function capConnections(fastify: FastifyInstance, max: number): void {
  const server = fastify.server;
  server.maxConnections = max;
  let reclaimedAt = 0;
  server.on('drop', () => {
    // A burst of refusals walks the connections once, not once each.
    if (Date.now() - reclaimedAt < RECLAIM_INTERVAL_MS) return;
    reclaimedAt = Date.now();
    server.closeIdleConnections();
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
