import { PGlite } from '@electric-sql/pglite';
import { PGLiteSocketServer } from '@electric-sql/pglite-socket';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, unlinkSync, writeSync } from 'node:fs';
import { join, resolve } from 'node:path';

/**
 * The embedded default: PGlite (Postgres in WebAssembly) served on a loopback port, so the app
 * talks to it with the same `pg` driver and migrations as production. The in-process TypeORM
 * driver for PGlite interleaves concurrent transactions on its one connection; the socket with a
 * pool of one does not (see DESIGN.md, Data).
 */
export interface EmbeddedDatabase {
  url: string;
  stop(): Promise<void>;
}

export class DataDirLockedError extends Error {}

/**
 * The app uses one connection (pool of one), and must: PGlite is a single session, and its socket
 * server interleaves the protocol messages of concurrent connections outside a transaction. The
 * extra slots only absorb reconnects: a client that reconnects (migrations, then the app's pool)
 * arrives before the socket server has processed the previous close, and with a limit of one it
 * would be turned away. So the embedded database serves exactly one API node.
 */
export const SOCKET_MAX_CONNECTIONS = 8;

/** One server per data directory: two PGlite processes writing one directory corrupt it. */
function acquireLock(dir: string): () => void {
  const path = join(dir, 'server.lock');
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fd = openSync(path, 'wx', 0o600);
      writeSync(fd, String(process.pid));
      closeSync(fd);
      return () => {
        try {
          if (readFileSync(path, 'utf8') === String(process.pid)) unlinkSync(path);
        } catch {
          // already gone
        }
      };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      const holder = Number(readFileSync(path, 'utf8').trim());
      if (Number.isInteger(holder) && holder > 0 && holder !== process.pid && isAlive(holder)) {
        throw new DataDirLockedError(
          `DATA_DIR ${resolve(dir)} is in use by another server (pid ${holder}). ` +
            'Stop it, or point DATA_DIR elsewhere: two servers on one embedded database would corrupt it.',
        );
      }
      // A stale lock from a process that died: take it over.
      unlinkSync(path);
    }
  }
  throw new DataDirLockedError(`could not lock DATA_DIR ${resolve(dir)}`);
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Starts PGlite. `dataDir` undefined keeps the data in memory (tests); otherwise it lives in
 * `<dataDir>/pgdata` and survives restarts.
 */
export async function startEmbeddedDatabase(dataDir?: string): Promise<EmbeddedDatabase> {
  let release = () => {};
  let db: PGlite;
  if (dataDir) {
    mkdirSync(dataDir, { recursive: true, mode: 0o700 });
    release = acquireLock(dataDir);
    try {
      db = await PGlite.create({ dataDir: join(dataDir, 'pgdata') });
    } catch (err) {
      release();
      throw err;
    }
  } else {
    db = await PGlite.create();
  }
  const server = new PGLiteSocketServer({ db, host: '127.0.0.1', port: 0, maxConnections: SOCKET_MAX_CONNECTIONS });
  await server.start();
  const port = Number(server.getServerConn().split(':').pop());
  return {
    url: `postgres://postgres:postgres@127.0.0.1:${port}/postgres`,
    async stop() {
      await server.stop();
      await db.close();
      release();
    },
  };
}

export function dataDirExists(dataDir: string): boolean {
  return existsSync(join(dataDir, 'pgdata'));
}
