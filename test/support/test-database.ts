import { randomBytes } from 'node:crypto';
import { Client } from 'pg';
import { runMigrations } from '../../src/database/database';
import { fork } from 'node:child_process';
import { join } from 'node:path';

export interface TestDatabase {
  url: string;
  poolSize: number;
  /** True when the tests run against a real PostgreSQL server (DATABASE_URL set). */
  real: boolean;
  drop(): Promise<void>;
}

/**
 * A fresh database for one test file, migrated unless told otherwise: a new database on the server named by
 * DATABASE_URL, or a new in-memory PGlite. Nothing is shared between files.
 */
export async function createTestDatabase(options: { migrate?: boolean } = {}): Promise<TestDatabase> {
  const migrate = options.migrate ?? true;
  const serverUrl = process.env.DATABASE_URL;
  if (!serverUrl) {
    // Migrated once per run (global-setup.ts); without it (a file run on its own by an IDE), migrate here.
    const template = migrate ? process.env.TEST_PGLITE_TEMPLATE : undefined;
    const embedded = await startEmbeddedChild(template);
    if (migrate && !template) await runMigrations(embedded.url);
    return { url: embedded.url, poolSize: 1, real: false, drop: embedded.stop };
  }
  const name = `t_${Date.now().toString(36)}_${randomBytes(4).toString('hex')}`;
  const template = migrate ? process.env.TEST_TEMPLATE_DATABASE : undefined;
  const admin = new Client({ connectionString: serverUrl });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name}${template ? ` TEMPLATE ${template}` : ''}`);
  } finally {
    await admin.end();
  }
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  if (migrate && !template) await runMigrations(url.toString());
  return {
    url: url.toString(),
    poolSize: 10,
    real: true,
    async drop() {
      const c = new Client({ connectionString: serverUrl });
      await c.connect();
      try {
        await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      } finally {
        await c.end();
      }
    },
  };
}

/** The embedded database exactly as `npm start` runs it (PGlite behind pglite-socket, pool of one), in memory. */
async function startEmbeddedChild(template?: string): Promise<{ url: string; stop(): Promise<void> }> {
  const child = fork(join(__dirname, 'pglite-child.js'), template ? ['--from', template] : [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const port = await new Promise<number>((resolve, reject) => {
    child.once('message', (m: { port: number }) => resolve(m.port));
    child.once('exit', (code) => reject(new Error(`embedded database exited with ${code}`)));
  });
  return {
    url: `postgres://postgres:postgres@127.0.0.1:${port}/postgres`,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}
