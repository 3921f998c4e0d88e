import { DataSource } from 'typeorm';
import { bearer, createOrg, createTestApp, publishAgent, TestApp, TestOrg } from './support/test-app';

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  'Index Cond'?: string;
  Filter?: string;
  Plans?: PlanNode[];
}

/**
 * A filtered list finds its page through an index that holds its filters (attack round 11, G-F3):
 * `GET /runs?agentId=` scanned every organization's runs, and `agentId` with `status` walked the
 * organization's rows, filtering. Each list's own statement is explained with sequential and
 * bitmap scans off, so the plan shows which index serves it whatever the table holds: every filter
 * must be a condition of that index, not a filter over the rows it walks.
 */
describe('filtered lists served by an index', () => {
  let t: TestApp;
  let org: TestOrg;
  let ds: DataSource;
  let agentId: string;
  beforeAll(async () => {
    t = await createTestApp();
    ds = t.app.get(DataSource);
    org = await createOrg(t, ['memory:read']);
    agentId = await publishAgent(t, org, 'filtered', { instructions: 'x', capabilities: [{ id: 'memory' }] });
  });
  afterAll(() => t.close());

  /** The statement a request sends about `table`, explained as the planner would run it without a sequential scan. */
  async function planOf(path: string, table: string, token = org.keys.viewer, statement = /page_bytes_before/): Promise<PlanNode[]> {
    const query = jest.spyOn(ds, 'query');
    try {
      await t.http
        .get(path)
        .set(...bearer(token))
        .expect(200);
      const sent = query.mock.calls.find(
        ([sql]) => typeof sql === 'string' && new RegExp(`FROM ${table}\\b`).test(sql) && /^\s*SELECT/.test(sql) && statement.test(sql),
      );
      expect(sent).toBeDefined();
      query.mockRestore();
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
    } finally {
      query.mockRestore();
    }
  }

  it.each([
    ['runs by agent', () => `/api/v1/runs?agentId=${agentId}`, 'run', ['agent_id']],
    ['runs by status', () => `/api/v1/runs?status=succeeded`, 'run', ['status']],
    ['runs by agent and status', () => `/api/v1/runs?agentId=${agentId}&status=failed`, 'run', ['agent_id', 'status']],
    ['tool calls by agent and status', () => `/api/v1/tool-calls?agentId=${agentId}&status=failed`, 'tool_call', ['agent_id', 'status']],
    ['approvals by agent', () => `/api/v1/approvals?agentId=${agentId}`, 'approval', ['agent_id']],
    ['approvals by agent and status', () => `/api/v1/approvals?agentId=${agentId}&status=rejected`, 'approval', ['agent_id', 'status']],
  ])('%s: every filter is a condition of the index scanned', async (_what, path, table, columns) => {
    const scans = await planOf(path(), table as string);
    expect(scans.length).toBeGreaterThan(0);
    for (const scan of scans) {
      expect(scan['Node Type']).toMatch(/Index/);
      for (const column of columns as string[]) {
        expect(scan['Index Cond'] ?? '').toContain(column);
        expect(scan.Filter ?? '').not.toContain(column);
      }
    }
  });

  it('counts the active keys (usage, and each key created) through an index of them alone, not every key ever revoked', async () => {
    // Revoked keys stay for good: 500,000 made each count 65 to 100 ms (attack round 11, G-F7).
    const scans = await planOf(`/api/v1/orgs/${org.id}/usage`, 'api_key', org.keys.admin, /revoked_at IS NULL/);
    expect(scans.length).toBeGreaterThan(0);
    for (const scan of scans) {
      expect(scan['Index Name']).toBe('api_key_active_idx');
      expect(scan.Filter ?? '').not.toContain('revoked_at');
    }
  });
});
