import { setTimeout as sleep } from 'node:timers/promises';
import { reconnectingMcpServer } from './support/mcp-reconnect-server';
import { bearer, createOrg, createTestApp, TestApp, TestOrg } from './support/test-app';

/**
 * Attack round 14, O-F2: an MCP server decides how soon its client reconnects an event stream
 * that ended (`retry:`), and the SDK starts counting attempts afresh after every stream that ended
 * cleanly. `retry: 0` and streams that end at once made the node reconnect as fast as it could,
 * for good: the session's stream, and the resumption of each call's answer, also after the call
 * had timed out (each call left a loop behind). Reconnections now wait at least a second, and a
 * call's streams are not reconnected once the call is over.
 */
describe('MCP catalog: a server that asks to be reconnected at once (e2e)', () => {
  let t: TestApp;
  let org: TestOrg;
  const as = (role: keyof TestOrg['keys']) => bearer(org.keys[role]);

  beforeAll(async () => {
    t = await createTestApp({ config: { toolTimeoutMs: 2000 } });
    org = await createOrg(t, ['mcp:remote']);
  }, 180_000);
  afterAll(async () => {
    await t.close();
  });

  it("reconnects the session's event stream at most about once a second, whatever `retry:` says", async () => {
    const mcp = await reconnectingMcpServer({ session: true });
    try {
      await t.http
        .post('/api/v1/mcp-connections')
        .set(...as('admin'))
        .send({ server: 'remote', name: 'session-storm', url: mcp.url })
        .expect(201);
      const from = mcp.state.sessionGets;
      await sleep(3000);
      // Was about 75 a second for one connection (1,000 a second for ten), for as long as the node ran.
      expect(mcp.state.sessionGets - from).toBeLessThanOrEqual(5);
    } finally {
      await mcp.close();
    }
  });

  it("stops resuming a call's answer once the call is over", async () => {
    const mcp = await reconnectingMcpServer({ session: false });
    try {
      const connection = (
        await t.http
          .post('/api/v1/mcp-connections')
          .set(...as('admin'))
          .send({ server: 'remote', name: 'resume-storm', url: mcp.url })
          .expect(201)
      ).body.id;
      await t.http
        .put(`/api/v1/mcp-connections/${connection}/tools/ok/risk`)
        .set(...as('admin'))
        .send({ risk: 'read_only' })
        .expect(200);
      const agent = (
        await t.http
          .post('/api/v1/agents')
          .set(...as('builder'))
          .send({ slug: 'resumer', name: 'Resumer' })
          .expect(201)
      ).body.id;
      await t.http
        .put(`/api/v1/agents/${agent}/draft`)
        .set(...as('builder'))
        .send({ instructions: 'x', capabilities: [], mcpServers: [{ connection, tools: ['ok'] }] })
        .expect(200);
      await t.http
        .post(`/api/v1/agents/${agent}/publish`)
        .set(...as('builder'))
        .expect(201);
      const calls = await Promise.all(
        [1, 2, 3].map(() =>
          t.http
            .post(`/api/v1/agents/${agent}/tool-calls`)
            .set(...as('agent'))
            .send({ tool: 'ok', arguments: {} })
            .expect(200),
        ),
      );
      for (const call of calls) expect(call.body).toMatchObject({ status: 'failed', error: { code: 'timeout' } });
      // The calls resumed their answers meanwhile, at most about once a second each (was hundreds a second).
      expect(mcp.state.resumptions).toBeLessThanOrEqual(3 * 4);
      const after = mcp.state.resumptions;
      await sleep(3000);
      // Was about 150 a second for each call timed out, for as long as the node ran.
      expect(mcp.state.resumptions - after).toBeLessThanOrEqual(3);
    } finally {
      await mcp.close();
    }
  });
});
