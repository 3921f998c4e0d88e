import { scansOf } from './support/plans';
import { createOrg, createTestApp, publishAgent, TestApp, TestOrg } from './support/test-app';

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
  let agentId: string;
  beforeAll(async () => {
    t = await createTestApp();
    org = await createOrg(t, ['memory:read']);
    agentId = await publishAgent(t, org, 'filtered', { instructions: 'x', capabilities: [{ id: 'memory' }] });
  });
  afterAll(() => t.close());

  it.each([
    ['runs by agent', () => `/api/v1/runs?agentId=${agentId}`, 'run', ['agent_id']],
    ['runs by status', () => `/api/v1/runs?status=succeeded`, 'run', ['status']],
    ['runs by agent and status', () => `/api/v1/runs?agentId=${agentId}&status=failed`, 'run', ['agent_id', 'status']],
    ['tool calls by agent and status', () => `/api/v1/tool-calls?agentId=${agentId}&status=failed`, 'tool_call', ['agent_id', 'status']],
    // A REST caller names any run id, so one run id's calls are as many as an agent key makes (attack round 18, W-F1).
    ['tool calls by run and status', () => `/api/v1/tool-calls?runId=r1&status=failed`, 'tool_call', ['run_id', 'status']],
    ['tool calls by agent and run', () => `/api/v1/tool-calls?agentId=${agentId}&runId=r1`, 'tool_call', ['agent_id', 'run_id']],
    [
      'tool calls by agent, run and status',
      () => `/api/v1/tool-calls?agentId=${agentId}&runId=r1&status=failed`,
      'tool_call',
      ['agent_id', 'run_id', 'status'],
    ],
    ['approvals by agent', () => `/api/v1/approvals?agentId=${agentId}`, 'approval', ['agent_id']],
    ['approvals by agent and status', () => `/api/v1/approvals?agentId=${agentId}&status=rejected`, 'approval', ['agent_id', 'status']],
  ])('%s: every filter is a condition of the index scanned', async (_what, path, table, columns) => {
    const scans = await scansOf(t, path(), table as string, { token: org.keys.viewer });
    expect(scans.length).toBeGreaterThan(0);
    for (const scan of scans) {
      expect(scan['Node Type']).toMatch(/Index/);
      for (const column of columns as string[]) {
        expect(scan['Index Cond'] ?? '').toContain(column);
        expect(scan.Filter ?? '').not.toContain(column);
      }
    }
  });

  it('counts the live keys (usage, and each key created) through an index of them alone, not every key ever revoked or expired', async () => {
    // Revoked keys stay for good: 500,000 made each count 65 to 100 ms (attack round 11, G-F7).
    // Expired ones too, and filtered row by row: 500,000 made each count 75 to 90 ms (attack round 17, V-F4).
    const scans = await scansOf(t, `/api/v1/orgs/${org.id}/usage`, 'api_key', { token: org.keys.admin, statement: /revoked_at IS NULL/ });
    expect(scans.length).toBe(2);
    for (const scan of scans) {
      expect(scan['Index Name']).toBe('api_key_live_idx');
      expect(scan['Index Cond']).toContain('expires_at');
      expect(scan.Filter ?? '').not.toMatch(/revoked_at|expires_at/);
    }
  });
});
