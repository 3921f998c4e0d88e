import { DataSource } from 'typeorm';
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

export async function runMigrations(url: string): Promise<void> {
  const ds = new DataSource({ ...dataSourceOptions(url, 1), entities: [] });
  await ds.initialize();
  try {
    await ds.runMigrations({ transaction: 'each' });
  } finally {
    await ds.destroy();
  }
}
