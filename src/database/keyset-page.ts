import { decodeCursor, DEFAULT_LIMIT, Page, PageQuery, pageOf } from '../common/pagination';

export interface Queryable {
  // As TypeORM's DataSource.query and EntityManager.query declare it, so both are Queryable.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  query(sql: string, params?: unknown[]): Promise<any>;
}

/**
 * One page of rows newest first, keyed by (created_at, id) so rows created in the same instant
 * still page stably. `where` is the tenant filter with its own parameters ($1..$n); the limit and
 * the cursor take the next ones. `alias` prefixes the key columns when the query joins.
 *
 * The cursor carries created_at to the microsecond, as PostgreSQL prints it: a JavaScript Date
 * keeps milliseconds only, and a key cut to the millisecond would skip the rows created later in
 * that same millisecond.
 */
export async function newestFirstPage<R extends { created_at: Date | string; id: string }, T>(
  db: Queryable,
  sql: { select: string; where: string; params: unknown[]; alias?: string },
  query: PageQuery,
  map: (row: R) => T,
): Promise<Page<T>> {
  const limit = query.limit ?? DEFAULT_LIMIT;
  const after = decodeCursor(query.cursor, ['timestamp', 'uuid']);
  const col = (name: string) => (sql.alias ? `${sql.alias}.${name}` : name);
  const params = [...sql.params, limit + 1];
  const limitParam = `$${params.length}`;
  let cursor = '';
  if (after) {
    params.push(after[0], after[1]);
    cursor = ` AND (${col('created_at')}, ${col('id')}) < ($${params.length - 1}::timestamptz, $${params.length}::uuid)`;
  }
  const rows: (R & { cursor_at: string })[] = await db.query(
    `SELECT p.*, to_char(p.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS cursor_at
       FROM (${sql.select} WHERE ${sql.where}${cursor} ORDER BY ${col('created_at')} DESC, ${col('id')} DESC LIMIT ${limitParam}) p
      ORDER BY p.created_at DESC, p.id DESC`,
    params,
  );
  return pageOf(rows, limit, (r) => [r.cursor_at, r.id], map);
}
