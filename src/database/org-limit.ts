import type { DataSource, EntityManager } from 'typeorm';
import { KEY_IS_LIVE } from './live-key';
import { ApiError } from '../common/api-error';
import { OrgGate } from '../common/org-gate';

/** One transaction at a time on this node per kind and organization (or agent): turnTransaction's. */
const turns = new OrgGate(1);

/**
 * Runs `work` in a transaction in the turn of `kind` and `key` (an organization's id, or an
 * agent's) on this node: the others wait here holding no connection. For changes that serialize
 * on a lock anyway (a row, an advisory lock) held to the end of another's transaction, each of
 * which otherwise waited for it holding one of the pool's connections (row 52's class). Nodes
 * still each hold one; the lock orders them.
 */
export function turnTransaction<T>(dataSource: DataSource, kind: string, key: string, work: (m: EntityManager) => Promise<T>): Promise<T> {
  return turns.run(`${kind}:${key}`, () => dataSource.transaction(work));
}

/**
 * Runs `work` in a transaction that counts `table`'s rows under the organization's lock
 * (countUnderOrgLock), in the organization's turn on this node: the rest wait here holding no
 * connection. The lock serializes them anyway, and each waited for it holding one of the pool's
 * connections: 100 key creations of one admin key at once held 9 of 10 waiting, and another
 * organization's `GET /agents` took up to 1.2 s (attack round 21, AE-F2; row 52's class).
 */
export function countingTransaction<T>(dataSource: DataSource, table: string, orgId: string, work: (m: EntityManager) => Promise<T>): Promise<T> {
  return turnTransaction(dataSource, table, orgId, work);
}

/**
 * How many rows of `table` the organization has, counted under a lock per organization and table
 * that is held to the end of `m`'s transaction, so that an insert after it cannot race another
 * past a limit (counted apart, 70 webhooks asked for at once made 53 of 50). `where` narrows the
 * rows counted (written here, never from a request).
 */
export async function countUnderOrgLock(m: EntityManager, table: string, orgId: string, where = 'true'): Promise<number> {
  await holdOrgCountLock(m, table, orgId);
  const [{ n }]: { n: number }[] = await m.query(`SELECT count(*)::int AS n FROM ${table} WHERE org_id = $1 AND (${where})`, [orgId]);
  return n;
}

/** The organization's lock for counting `table`'s rows (countUnderOrgLock's), to the end of `m`'s transaction. */
export async function holdOrgCountLock(m: Pick<EntityManager, 'query'>, table: string, orgId: string): Promise<void> {
  await m.query(`SELECT pg_advisory_xact_lock(hashtextextended($1 || ':' || $2::text, 0))`, [table, orgId]);
}

/**
 * Holds the API key a change is made with (`FOR SHARE`, to the end of `m`'s transaction), or
 * refuses `401` once it is revoked; nothing for another principal (`undefined`). A request is
 * authorized when it arrives, and creations of an organization's keys, webhooks and MCP
 * connections wait their turn (countUnderOrgLock) or a server's listing first: a leaked key's
 * burst, queued, made admin keys and webhooks after its revocation had committed (attack round
 * 13, M-F2). Taken after the count's lock, so a revocation waits for one creation at most.
 */
export async function holdActingKey(m: Pick<EntityManager, 'query'>, orgId: string, keyId: string | undefined): Promise<void> {
  if (keyId === undefined) return;
  const rows: unknown[] = await m.query(`SELECT 1 FROM api_key WHERE org_id = $1 AND id = $2 AND ${KEY_IS_LIVE} FOR SHARE`, [orgId, keyId]);
  if (rows.length === 0) throw ApiError.unauthorized('The key was revoked, or expired, while this request waited; nothing was made.');
}
