import { decodeCursor, DEFAULT_LIMIT, Page, PAGE_BYTE_BUDGET, PageQuery, pageOf } from '../common/pagination';

export interface Queryable {
  // As TypeORM's DataSource.query and EntityManager.query declare it, so both are Queryable.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  query(sql: string, params?: unknown[]): Promise<any>;
}

/** A page's candidate rows as the database answered them, and how many there were before the budget ended it. */
export interface BudgetedRows<R> {
  rows: R[];
  found: number;
}

/**
 * Runs the query of a list whose rows can be large so that the page ends in the database, once
 * its rows pass the byte budget: a list that read its `limit + 1` candidates and cut the page in
 * the node held all of them first (200 runs of a 1 MB transcript: 200 MB for one
 * `GET /runs?limit=200`, several times that parsed).
 *
 * `sql` selects the candidates in page order, with its LIMIT; `order` is that order over the
 * columns it outputs. `bytes` are what a candidate weighs as it will be sent, summed, each term
 * over the alias `w` (NULL counts 0): `octet_length(w.<text column>)`, which reads the value's
 * header and not the value, and a JSON column's stored `w.<column>_bytes` (a JSON value has to be
 * printed to be measured: migrations/1764522000000-list-value-bytes.ts measures it once, when
 * written). A running sum keeps the rows that start within the budget, so a page holds at least
 * one and at most the budget plus its last row. The window passes the large values along as
 * TOAST pointers: the rows it drops are never read from disk, let alone sent.
 */
export async function rowsWithinBudget<R>(
  db: Queryable,
  sql: { text: string; params: unknown[]; order: string; bytes: readonly string[] },
  budget = PAGE_BYTE_BUDGET,
): Promise<BudgetedRows<R>> {
  const weight = sql.bytes.map((term) => `coalesce(${term}, 0)`).join(' + ');
  const rows: (R & { page_bytes_before?: unknown; page_rows_found?: unknown })[] = await db.query(
    `SELECT * FROM (
       SELECT w.*, coalesce(sum(${weight}) OVER (ORDER BY ${sql.order} ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS page_bytes_before,
              count(*) OVER () AS page_rows_found
         FROM (${sql.text}) w
     ) b WHERE b.page_bytes_before < ${Math.floor(budget)} ORDER BY ${sql.order}`,
    sql.params,
  );
  const found = rows.length > 0 ? Number(rows[0].page_rows_found) : 0;
  for (const row of rows) {
    delete row.page_bytes_before;
    delete row.page_rows_found;
  }
  return { rows, found };
}

/**
 * One page of rows newest first, keyed by (created_at, id) so rows created in the same instant
 * still page stably. `where` is the tenant filter with its own parameters ($1..$n); the limit and
 * the cursor take the next ones. `alias` prefixes the key columns when the query joins. `bytes`,
 * for a list whose rows can be large, ends the page in the database (rowsWithinBudget).
 *
 * The cursor carries created_at to the microsecond, as PostgreSQL prints it: a JavaScript Date
 * keeps milliseconds only, and a key cut to the millisecond would skip the rows created later in
 * that same millisecond.
 */
export async function newestFirstPage<R extends { created_at: Date | string; id: string }, T>(
  db: Queryable,
  sql: { select: string; where: string; params: unknown[]; alias?: string; bytes?: readonly string[] },
  query: PageQuery,
  map: (row: R) => T,
  budget = PAGE_BYTE_BUDGET,
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
  const text = `SELECT p.*, to_char(p.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS cursor_at
       FROM (${sql.select} WHERE ${sql.where}${cursor} ORDER BY ${col('created_at')} DESC, ${col('id')} DESC LIMIT ${limitParam}) p`;
  const { rows, found }: BudgetedRows<R & { cursor_at: string }> = sql.bytes
    ? await rowsWithinBudget(db, { text, params, order: 'created_at DESC, id DESC', bytes: sql.bytes }, budget)
    : { rows: await db.query(`${text} ORDER BY p.created_at DESC, p.id DESC`, params), found: 0 };
  return pageOf(rows, limit, (r) => [r.cursor_at, r.id], map, budget, found);
}
