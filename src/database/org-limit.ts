import type { EntityManager } from 'typeorm';

/**
 * How many rows of `table` the organization has, counted under a lock per organization and table
 * that is held to the end of `m`'s transaction, so that an insert after it cannot race another
 * past a limit (counted apart, 70 webhooks asked for at once made 53 of 50). `where` narrows the
 * rows counted (written here, never from a request).
 */
export async function countUnderOrgLock(m: EntityManager, table: string, orgId: string, where = 'true'): Promise<number> {
  await m.query(`SELECT pg_advisory_xact_lock(hashtextextended($1 || ':' || $2::text, 0))`, [table, orgId]);
  const [{ n }]: { n: number }[] = await m.query(`SELECT count(*)::int AS n FROM ${table} WHERE org_id = $1 AND (${where})`, [orgId]);
  return n;
}
