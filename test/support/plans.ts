import { DataSource } from 'typeorm';
import { bearer, TestApp } from './test-app';

export interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  'Index Cond'?: string;
  Filter?: string;
  Plans?: PlanNode[];
}

/**
 * The scans of `table` in the plan of the statement a `GET path` sends about it (the first SELECT
 * from `table` matching `statement`), explained with sequential and bitmap scans off: whatever the
 * table holds when the test runs, the plan then shows which index would serve the statement, so a
 * filter that is not a condition of that index shows as a `Filter` over the rows it walks.
 */
export async function scansOf(
  t: TestApp,
  path: string,
  table: string,
  { token, statement = /page_bytes_before/ }: { token: string; statement?: RegExp },
): Promise<PlanNode[]> {
  const ds = t.app.get(DataSource);
  const query = jest.spyOn(ds, 'query');
  let sent: [string, unknown[]] | undefined;
  try {
    await t.http
      .get(path)
      .set(...bearer(token))
      .expect(200);
    const from = new RegExp(`FROM ${table}\\b`);
    sent = query.mock.calls.find(([sql]) => typeof sql === 'string' && /^\s*SELECT/.test(sql) && from.test(sql) && statement.test(sql)) as
      [string, unknown[]] | undefined;
  } finally {
    query.mockRestore();
  }
  expect(sent).toBeDefined();
  const [sql, params] = sent as [string, unknown[]];
  const plan: [{ 'QUERY PLAN': [{ Plan: PlanNode }] }] = await ds.transaction(async (m) => {
    await m.query('SET LOCAL enable_seqscan = off');
    await m.query('SET LOCAL enable_bitmapscan = off');
    return m.query(`EXPLAIN (FORMAT JSON) ${sql}`, params);
  });
  const scans: PlanNode[] = [];
  const walk = (n: PlanNode) => {
    if (n['Relation Name'] === table) scans.push(n);
    n.Plans?.forEach(walk);
  };
  walk(plan[0]['QUERY PLAN'][0].Plan);
  return scans;
}
