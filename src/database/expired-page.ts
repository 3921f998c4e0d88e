/**
 * The candidates of a newest-first page filtered to what reads `expired`: rows settled as expired,
 * and rows still pending past their expiry that no sweep has settled yet (they read `expired`
 * already). As one condition, `status = 'expired' OR (status = pending AND expiry <= now())`, no
 * index holds it: the planner walked the organization's whole index filtering (300,000 newer calls
 * of other statuses: 211 ms a page), or scanned every organization's table (with 300,000 pending
 * calls: 313 ms), and both grow with what the organization writes (attack round 15, Q-F2). So two
 * branches, each found through an index that holds its condition and each ordered and limited
 * there, merged and limited again:
 *
 * - `settled`: a status, a condition of the (org, [agent,] status, created_at, id) indexes;
 * - `lapsed`: the pending rows past their expiry, through the partial index on pending approvals'
 *   expiry (the rows every sweep settles, so few), never the organization's pending rows.
 *
 * `where` holds every other condition (tenant, filters, cursor); `order` is over the alias. Without
 * `expired`, the one statement of any other filter.
 */
export function listPageSql(p: {
  select: string;
  from: string;
  where: readonly string[];
  order: string;
  limit: string;
  expired?: { settled: string; lapsed: string };
}): string {
  const branch = (conditions: readonly string[]) => `SELECT ${p.select} FROM ${p.from} WHERE ${conditions.join(' AND ')} ORDER BY ${p.order} LIMIT ${p.limit}`;
  if (!p.expired) return branch(p.where);
  // The same order over the columns the branches output: `c.created_at DESC` -> `created_at DESC`.
  const outer = p.order.replace(/\b\w+\./g, '');
  return `SELECT * FROM ((${branch([...p.where, p.expired.settled])}) UNION ALL (${branch([...p.where, p.expired.lapsed])})) expired ORDER BY ${outer} LIMIT ${p.limit}`;
}

/** The pending rows past their expiry, found by id among the organization's ($1) approvals still pending past theirs. */
const lapsed = (column: 'id' | 'tool_call_id') =>
  `ARRAY(SELECT lapsed.${column} FROM approval lapsed WHERE lapsed.status = 'pending' AND lapsed.expires_at <= now() AND lapsed.org_id = $1)`;

/** `GET /tool-calls?status=expired` over `tool_call c`. */
export const EXPIRED_CALLS = {
  settled: `c.status = 'expired'`,
  lapsed: `c.id = ANY (${lapsed('tool_call_id')}) AND c.status = 'pending_approval' AND c.approval_expires_at <= now()`,
};

/** `GET /approvals?status=expired` over `approval a`. */
export const EXPIRED_APPROVALS = {
  settled: `a.status = 'expired'`,
  lapsed: `a.id = ANY (${lapsed('id')}) AND a.status = 'pending' AND a.expires_at <= now()`,
};
