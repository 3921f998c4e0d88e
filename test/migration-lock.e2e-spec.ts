import { randomBytes } from 'node:crypto';
import { Client } from 'pg';
import request from 'supertest';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { runMigrations } from '../src/database/database';
import { ServerProcess, startServerProcess, stopServerProcess } from './support/server-process';
import { createTestDatabase, TestDatabase } from './support/test-database';

const migrationFiles = readdirSync(join(__dirname, '..', 'migrations')).filter((f) => f.endsWith('.ts'));

async function appliedMigrations(url: string): Promise<string[]> {
  const c = new Client({ connectionString: url });
  await c.connect();
  try {
    return (await c.query<{ name: string }>('SELECT name FROM migrations ORDER BY id')).rows.map((r) => r.name);
  } finally {
    await c.end();
  }
}

/**
 * Migrations run under a PostgreSQL advisory lock, so nodes that start together on one database
 * never race them (before, two nodes on a fresh database both ran the first migration and one
 * exited).
 */
describe('migrations under a lock', () => {
  it('applies every migration once when five runs race on one fresh database, and then nothing', async () => {
    const db = await createTestDatabase({ migrate: false });
    try {
      // The embedded database serves one connection at a time, so there the runs queue at the
      // socket; on a server they meet at the lock.
      const runs = await Promise.all(Array.from({ length: db.real ? 5 : 1 }, () => runMigrations(db.url)));
      expect(
        runs
          .flat()
          .map((m) => m.name)
          .sort(),
      ).toEqual((await appliedMigrations(db.url)).sort());
      expect(await appliedMigrations(db.url)).toHaveLength(migrationFiles.length);
      expect(await runMigrations(db.url)).toEqual([]);
    } finally {
      await db.drop();
    }
  });

  const onRealServer = Boolean(process.env.DATABASE_URL);
  if (!onRealServer) console.info('five nodes on one database: runs when DATABASE_URL is set (the embedded database is one node by design)');
  (onRealServer ? describe : describe.skip)('five API nodes started together on one fresh PostgreSQL database', () => {
    let db: TestDatabase;
    let nodes: ServerProcess[] = [];

    beforeAll(async () => {
      db = await createTestDatabase({ migrate: false });
    });
    afterAll(async () => {
      await Promise.all(nodes.map((n) => stopServerProcess(n)));
      await db?.drop();
    });

    it('all start, all serve, and the schema is migrated once', async () => {
      // Every node of one deployment shares the secrets key (the server refuses to start without one on PostgreSQL).
      const env = {
        DATABASE_URL: db.url,
        DATABASE_POOL_SIZE: '2',
        PLATFORM_ADMIN_TOKEN: 'cpa_five_nodes_' + 'z'.repeat(24),
        SECRETS_KEY: randomBytes(32).toString('base64'),
      };
      const started = await Promise.allSettled(Array.from({ length: 5 }, () => startServerProcess(env)));
      nodes = started.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []));
      expect(started.filter((s) => s.status === 'rejected').map((s) => String((s as PromiseRejectedResult).reason))).toEqual([]);
      for (const node of nodes) await request(node.url).get('/health/ready').expect(200);
      const applied = await appliedMigrations(db.url);
      expect(applied).toHaveLength(migrationFiles.length);
      expect(new Set(applied).size).toBe(applied.length);
    }, 180_000);
  });
});
