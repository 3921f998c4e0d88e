import { DataSource } from 'typeorm';
import { DEFAULT_STORAGE_LIMITS } from '../src/config/database-config';
import { VersionBuilder } from '../src/agents/version-builder.service';
import { FixtureMcpServer, startFixtureMcpServer } from './support/mcp-fixture-server';
import { bearer, createOrg, createTestApp, TestApp, TestOrg } from './support/test-app';

/**
 * A publish composed the draft's version afresh every time, also when nothing had changed (`200`),
 * and only then learned in its transaction that the organization's agents were past their bound:
 * an agent binding 20 MCP connections of 500 tools took 0.5 s of the node for each such publish,
 * and one builder key's two at a time took another organization's `GET /agents` from p50 9 ms to
 * 132 ms (attack round 15, Q-F4). An unchanged draft is now answered from the latest version as
 * reads build it (its MCP tools composed once), and a full organization is refused before composing.
 */
describe('publishes that compose nothing they need not (e2e)', () => {
  let t: TestApp;
  let org: TestOrg;
  let ds: DataSource;
  let server: FixtureMcpServer;

  beforeAll(async () => {
    t = await createTestApp({ config: { storage: { ...DEFAULT_STORAGE_LIMITS, agentBytesPerOrg: 200_000 } } });
    ds = t.app.get(DataSource);
    org = await createOrg(t, ['memory:read', 'mcp:remote']);
    server = await startFixtureMcpServer();
  }, 240_000);
  afterAll(async () => {
    await server.close();
    await t.close();
  });

  const as = (role: keyof TestOrg['keys']) => bearer(org.keys[role]);
  const publish = () => t.http.post(`/api/v1/agents/${agent}/publish`).set(...as('builder'));
  let agent: string;

  /** How many times a request composed a version's tools for publishing. */
  async function composing(request: () => Promise<{ status: number; body: { version?: number } }>) {
    const compose = jest.spyOn(VersionBuilder.prototype, 'compose');
    try {
      const res = await request();
      return { status: res.status, version: res.body.version, composed: compose.mock.calls.length };
    } finally {
      compose.mockRestore();
    }
  }

  it('answers an unchanged draft with the latest version without composing it, and publishes what changed', async () => {
    const connection = (
      await t.http
        .post('/api/v1/mcp-connections')
        .set(...as('admin'))
        .send({ server: 'remote', name: 'vendor', url: server.url })
        .expect(201)
    ).body.id;
    agent = (
      await t.http
        .post('/api/v1/agents')
        .set(...as('builder'))
        .send({ slug: 'steady', name: 'Steady' })
        .expect(201)
    ).body.id;
    const draft = { instructions: 'One.', capabilities: [{ id: 'memory' }], mcpServers: [{ connection }] };
    await t.http
      .put(`/api/v1/agents/${agent}/draft`)
      .set(...as('builder'))
      .send(draft)
      .expect(200);
    expect(await composing(publish)).toMatchObject({ status: 201, version: 1, composed: 1 });
    // Nothing changed: the latest version, nothing composed (was one composition a publish).
    expect(await composing(publish)).toEqual({ status: 200, version: 1, composed: 0 });
    expect(await composing(publish)).toEqual({ status: 200, version: 1, composed: 0 });

    // The server's tool changed: the same draft is a new version, composed.
    server.state.lookupDescription = 'Looks a customer up, another way.';
    await t.http
      .post(`/api/v1/mcp-connections/${connection}/sync`)
      .set(...as('admin'))
      .expect(200);
    expect(await composing(publish)).toMatchObject({ status: 201, version: 2, composed: 1 });
    expect(await composing(publish)).toEqual({ status: 200, version: 2, composed: 0 });

    // A changed draft is a new version.
    await t.http
      .put(`/api/v1/agents/${agent}/draft`)
      .set(...as('builder'))
      .send({ ...draft, instructions: 'Two.' })
      .expect(200);
    expect(await composing(publish)).toMatchObject({ status: 201, version: 3, composed: 1 });
    const versions = await ds.query(`SELECT count(*)::int AS n FROM agent_version WHERE agent_id = $1`, [agent]);
    expect(versions[0].n).toBe(3);
  });

  it('refuses a publish of a full organization before composing, and still answers an unchanged one', async () => {
    // The organization's agents at their bound (200,000 bytes), as a long run of publishes leaves them.
    await ds.query(`UPDATE agent_usage SET bytes = 200000 WHERE org_id = $1`, [org.id]);
    try {
      expect(await composing(publish)).toEqual({ status: 200, version: 3, composed: 0 });
      await t.http
        .put(`/api/v1/agents/${agent}/draft`)
        .set(...as('builder'))
        .send({ instructions: 'Three.', capabilities: [{ id: 'memory' }] })
        .expect(200);
      // (A shorter draft is always taken, and gave some bytes back.)
      await ds.query(`UPDATE agent_usage SET bytes = 200000 WHERE org_id = $1`, [org.id]);
      expect(await composing(publish)).toEqual({ status: 409, version: undefined, composed: 0 });
      const versions = await ds.query(`SELECT count(*)::int AS n FROM agent_version WHERE agent_id = $1`, [agent]);
      expect(versions[0].n).toBe(3);
    } finally {
      await ds.query(`UPDATE agent_usage SET bytes = 0 WHERE org_id = $1`, [org.id]);
    }
  });
});
