import type { Client } from 'pg';

/**
 * Connections of the test's database waiting on a lock (only advisory ones when asked), read from
 * `holder`, the connection that holds it. The statistics snapshot is cleared first: read from inside
 * a transaction, PostgreSQL keeps its first read of pg_stat_activity until the transaction ends,
 * and a first read made before the waiters arrived said 0 for good (session 45).
 */
export async function connectionsWaitingOnLock(holder: Client, only?: 'advisory'): Promise<number> {
  await holder.query('SELECT pg_stat_clear_snapshot()');
  const rows = await holder.query(
    `SELECT count(*)::int AS n FROM pg_stat_activity
      WHERE datname = current_database() AND wait_event_type = 'Lock' AND ($1::text IS NULL OR wait_event = $1)`,
    [only ?? null],
  );
  return rows.rows[0].n as number;
}
