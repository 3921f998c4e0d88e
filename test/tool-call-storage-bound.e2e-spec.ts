import { randomBytes, randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { DEFAULT_STORAGE_LIMITS } from '../src/config/database-config';
import { FixtureMcpServer, startFixtureMcpServer } from './support/mcp-fixture-server';
import { bearer, createOrg, createTestApp, publishMcpAgent, TestApp, TestOrg } from './support/test-app';

/**
 * Attack round 13, M-F5: RUNS_MAX_BYTES_PER_ORG bounds what an organization's runs and tool calls
 * store, calls' arguments past 2 KB included, but only a run's start and an offloaded result were
 * refused at it: calls over REST or MCP were recorded whatever their arguments weighed. Against a
 * bound of 1 MB, one agent key's 40 calls of an MCP tool taking any object stored 37 MB of
 * arguments in 1.5 s, every one `202`. A call whose arguments the bound counts is now refused
 * `409 conflict` once the organization stores its bound, nothing recorded; lighter calls go on.
 */
describe('tool calls against the storage bound of runs and tool calls (e2e, attack round 13 M-F5)', () => {
  let t: TestApp;
  let org: TestOrg;
  let server: FixtureMcpServer;
  let agentId: string;
  let ds: DataSource;

  beforeAll(async () => {
    t = await createTestApp({ config: { storage: { ...DEFAULT_STORAGE_LIMITS, runBytesPerOrg: 1_000_000 } } });
    ds = t.app.get(DataSource);
    org = await createOrg(t, ['mcp:remote']);
    server = await startFixtureMcpServer();
    server.state.rawToolsList = () => ({ result: { tools: [{ name: 'store', description: 'Stores anything.', inputSchema: { type: 'object' } }] } });
    agentId = await publishMcpAgent(t, org, 'store', server.url);
  }, 240_000);
  afterAll(async () => {
    await server.close();
    await t.close();
  });

  const call = (args: object, key?: string) => {
    const req = t.http
      .post(`/api/v1/agents/${agentId}/tool-calls`)
      .set(...bearer(org.keys.agent))
      .send({ tool: 'store', arguments: args });
    return key ? req.set('Idempotency-Key', key) : req;
  };
  // Random bytes as base64: PostgreSQL cannot compress them, so they weigh what they say.
  const heavy = () => ({ blob: randomBytes(500_000).toString('base64') });
  const calls = async () => ((await ds.query(`SELECT count(*)::int AS n FROM tool_call WHERE org_id = $1`, [org.id])) as { n: number }[])[0].n;

  it('refuses heavy arguments once the bound is stored, records nothing, and still takes light ones', async () => {
    expect((await call(heavy())).status).toBe(202);
    expect((await call(heavy())).status).toBe(202);
    const recorded = await calls();
    const key = randomUUID();
    const refused = await call(heavy(), key);
    expect({ status: refused.status, code: refused.body.code }).toEqual({ status: 409, code: 'conflict' });
    expect(refused.body.detail).toContain('RUNS_MAX_BYTES_PER_ORG');
    expect(await calls()).toBe(recorded);
    const [{ n }]: { n: number }[] = await ds.query(`SELECT count(*)::int AS n FROM idempotency_key WHERE org_id = $1 AND key = $2`, [org.id, key]);
    expect(n).toBe(0);
    const usage = (
      await t.http
        .get(`/api/v1/orgs/${org.id}/usage`)
        .set(...bearer(org.keys.admin))
        .expect(200)
    ).body.items.find((i: { meter: string }) => i.meter === 'runs');
    expect(usage.used).toBeLessThan(2 * usage.limit);

    expect((await call({ note: 'light' })).status).toBe(202);
    expect(await calls()).toBe(recorded + 1);
    // Measured as the bound counts them (attack round 18, W-N1): 1,019 zeros are 2,047 characters
    // of JSON, and 12 KB as stored. Let through by their text, each such call added 12 KB past the bound.
    const zeros = { ids: Array.from({ length: 1019 }, () => 0) };
    expect(JSON.stringify(zeros).length).toBeLessThan(2048);
    const counted = await call(zeros);
    expect({ status: counted.status, code: counted.body.code }).toEqual({ status: 409, code: 'conflict' });
    expect(await calls()).toBe(recorded + 1);
    // As many characters of a string weigh what they say: not counted, taken.
    expect((await call({ note: 'x'.repeat(2000) })).status).toBe(202);
    expect(await calls()).toBe(recorded + 2);
  });
});
