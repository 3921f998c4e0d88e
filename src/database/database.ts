import { DataSource, Migration, MigrationExecutor, QueryRunner } from 'typeorm';
import { AppConfig } from '../config/app-config';
import { dataSourceOptions } from './data-source-options';
import { EmbeddedDatabase, startEmbeddedDatabase } from './embedded-database';

export interface DatabaseHandle {
  url: string;
  poolSize: number;
  embedded?: EmbeddedDatabase;
}

/** Resolves where the database is: DATABASE_URL, or the embedded one in DATA_DIR (pool of one). */
export async function openDatabase(config: Pick<AppConfig, 'databaseUrl' | 'dataDir' | 'databasePoolSize'>): Promise<DatabaseHandle> {
  if (config.databaseUrl) return { url: config.databaseUrl, poolSize: config.databasePoolSize };
  const embedded = await startEmbeddedDatabase(config.dataDir);
  return { url: embedded.url, poolSize: 1, embedded };
}

/**
 * The key of the session-level advisory lock every migration run holds: "capmigr" in ASCII
 * (0x6361706d696772), written in decimal because PostgreSQL 15 reads no hex literals. One constant
 * for the whole product: two nodes of any version must exclude each other.
 */
export const MIGRATION_LOCK_KEY = '27973158194210674';

/**
 * Applies the pending migrations. Any number of nodes may call this at once on one database:
 * without the lock, two nodes starting together on a fresh database both saw "nothing applied",
 * both ran the first migration, and one exited on a duplicate table.
 */
export async function runMigrations(url: string, log: (message: string) => void = () => {}): Promise<Migration[]> {
  return withMigrationLock(url, log, (executor) => executor.executePendingMigrations());
}

/** Reverts the last applied migration, under the same lock. */
export async function revertLastMigration(url: string, log: (message: string) => void = () => {}): Promise<void> {
  await withMigrationLock(url, log, (executor) => executor.undoLastMigration());
}

/** How often a node waiting for another's migrations asks for the lock again. */
const MIGRATION_LOCK_POLL_MS = 200;

/**
 * Runs `work` with the migration lock held by the very session that runs the migrations (one
 * connection: the embedded database serves only one, and a lock held on another connection would
 * be released if that one dropped while the migrations went on).
 */
async function withMigrationLock<T>(url: string, log: (message: string) => void, work: (executor: MigrationExecutor) => Promise<T>): Promise<T> {
  const ds = new DataSource({ ...dataSourceOptions(url, 1), entities: [] });
  await ds.initialize();
  let runner: QueryRunner | undefined;
  try {
    runner = ds.createQueryRunner();
    await runner.connect();
    const tryLock = async (r: QueryRunner) =>
      ((await r.query(`SELECT pg_try_advisory_lock(${MIGRATION_LOCK_KEY}::bigint) AS locked`)) as { locked: boolean }[])[0].locked;
    if (!(await tryLock(runner))) {
      log('waiting for another node to finish migrating the database');
      // Asked again and again, not waited for in one statement: a statement waiting for the lock
      // holds a snapshot all the while, and a migration that builds an index CONCURRENTLY waits for
      // every older snapshot to go, so the two waited for each other (PostgreSQL: deadlock detected).
      while (!(await tryLock(runner))) await new Promise((resolve) => setTimeout(resolve, MIGRATION_LOCK_POLL_MS));
    }
    try {
      const executor = new MigrationExecutor(ds, runner);
      executor.transaction = 'each';
      return await work(executor);
    } finally {
      // A connection that broke has released the lock with its session; that error is not the
      // one to report.
      await runner.query(`SELECT pg_advisory_unlock(${MIGRATION_LOCK_KEY}::bigint)`).catch(() => undefined);
    }
  } finally {
    await runner?.release();
    await ds.destroy();
  }
}
