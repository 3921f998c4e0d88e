const { PGlite } = require('@electric-sql/pglite');
const { PGLiteSocketServer } = require('@electric-sql/pglite-socket');
require('@swc-node/register');
const { runMigrations } = require('./src/database/database.ts');
async function freshMigrated() {
  const db = await PGlite.create();
  const server = new PGLiteSocketServer({ db, host: '127.0.0.1', port: 0, maxConnections: 8 });
  await server.start();
  const port = Number(String(server.getServerConn()).split(':').pop());
  await runMigrations(`postgres://postgres:postgres@127.0.0.1:${port}/postgres`);
  await server.stop();
  return db;
}
(async () => {
  let db = await freshMigrated();
  const dump = await db.dumpDataDir('none');
  for (let i = 0; i < 3; i++) {
    let t = Date.now();
    await (await freshMigrated()).close();
    const a = Date.now() - t;
    t = Date.now();
    await (await PGlite.create({ loadDataDir: dump })).close();
    console.log('fresh+migrate', a, 'load', Date.now() - t);
  }
  process.exit(0);
})();
