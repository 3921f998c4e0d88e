// A throwaway in-memory PGlite served on a loopback port, for one test file. It runs in its own
// process because PGlite loads parts of itself with a dynamic import() that Jest's module sandbox
// cannot execute; it exits with its parent.
//
// `--from <dump>`: starts from the migrated template (test/support/global-setup.ts) instead of an
// empty database. `--dump-to <path>`: on the message `{ dump: true }`, writes the data directory
// there and exits (how global-setup makes the template).
const { readFileSync, writeFileSync } = require('node:fs');
const { PGlite } = require('@electric-sql/pglite');
const { PGLiteSocketServer } = require('@electric-sql/pglite-socket');

const arg = (name) => {
  const i = process.argv.indexOf(name);
  return i === -1 ? undefined : process.argv[i + 1];
};

(async () => {
  const from = arg('--from');
  const dumpTo = arg('--dump-to');
  const db = await PGlite.create(from ? { loadDataDir: new Blob([readFileSync(from)]) } : {});
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
  if (dumpTo) {
    process.on('message', async (m) => {
      if (!m || !m.dump) return;
      await server.stop();
      const dump = await db.dumpDataDir('none');
      writeFileSync(dumpTo, Buffer.from(await dump.arrayBuffer()));
      await db.close();
      process.exit(0);
    });
  }
  process.on('disconnect', stop);
  process.on('SIGTERM', stop);
})().catch((err) => {
  console.error(err);
  process.exit(1);
});
