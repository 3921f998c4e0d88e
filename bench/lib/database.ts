import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';

/**
 * A database that lives for one benchmark run: a temporary DATA_DIR for the embedded database, or
 * a fresh database on the PostgreSQL server named by DATABASE_URL, dropped afterwards. Nothing a
 * run writes survives it, and two runs never share data.
 */
export interface BenchDatabase {
  mode: 'embedded' | 'postgres';
  /** What a server process needs in its environment to use it. */
  env: Record<string, string>;
  /** postgres mode only: the URL of the fresh database. */
  url?: string;
  drop(): Promise<void>;
}

export async function createBenchDatabase(label: string, serverUrl: string | undefined): Promise<BenchDatabase> {
  if (!serverUrl) {
    const dir = mkdtempSync(join(tmpdir(), `bench-${label}-`));
    return {
      mode: 'embedded',
      env: { DATA_DIR: dir },
      async drop() {
        rmSync(dir, { recursive: true, force: true });
      },
    };
  }
  const name = `bench_${label.replace(/[^a-z0-9]/g, '_')}_${Date.now().toString(36)}_${randomBytes(3).toString('hex')}`;
  await adminQuery(serverUrl, `CREATE DATABASE ${name}`);
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return {
    mode: 'postgres',
    env: { DATABASE_URL: url.toString() },
    url: url.toString(),
    async drop() {
      await adminQuery(serverUrl, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    },
  };
}

async function adminQuery(serverUrl: string, sql: string): Promise<void> {
  const client = new Client({ connectionString: serverUrl });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

/** `PostgreSQL 15.20` or `PGlite (PostgreSQL 18.x)`: what the figures were measured on. */
export async function serverVersion(url: string): Promise<string> {
  const client = new Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ v: string }>(`SELECT current_setting('server_version') AS v`);
    return rows[0].v;
  } finally {
    await client.end();
  }
}
