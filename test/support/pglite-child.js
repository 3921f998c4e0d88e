// A throwaway in-memory PGlite served on a loopback port, for one test file. It runs in its own
// process because PGlite loads parts of itself with a dynamic import() that Jest's module sandbox
// cannot execute; it exits with its parent.
const { PGlite } = require('@electric-sql/pglite');
const { PGLiteSocketServer } = require('@electric-sql/pglite-socket');

(async () => {
  const db = await PGlite.create();
  const server = new PGLiteSocketServer({ db, host: '127.0.0.1', port: 0, maxConnections: 8 });
  await server.start();
  const port = Number(String(server.getServerConn()).split(':').pop());
  process.send({ port });
  const stop = async () => {
    try {
      await server.stop();
      await db.close();
    } finally {
      process.exit(0);
    }
  };
  process.on('disconnect', stop);
  process.on('SIGTERM', stop);
})().catch((err) => {
  console.error(err);
  process.exit(1);
});
