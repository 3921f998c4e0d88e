import { randomUUID } from 'node:crypto';
import { RunFixturesModule } from './fixtures/run-fixtures.module';
import { ScriptedModel, startScriptedModel } from './support/scripted-model';
import { bearer, createOrg, createTestApp, mcpMessage, publishAgent, TestApp, TestOrg } from './support/test-app';
import { testRunsConfig } from './support/runs-config';

/**
 * A runtime key pinned to some agents (`agentIds`) acts for those only: every other agent of its
 * organization is answered to it as a missing one, wherever a key meets an agent (its versions,
 * its tool calls over REST and MCP, its runs), and its reads of tool calls and runs hold only
 * its agents'. Unpinned keys read and act as before.
 */
describe('API keys pinned to agents (e2e)', () => {
  let t: TestApp;
  let model: ScriptedModel;
  let org: TestOrg;
  let other: TestOrg;
  let mine: string;
  let theirs: string;
  let foreign: string;
  let pinned: { id: string; token: string };

  beforeAll(async () => {
    model = await startScriptedModel(() => ({ text: 'done' }));
    t = await createTestApp({ imports: [RunFixturesModule], config: { runs: testRunsConfig() } });
    await t.app.listen(0, '127.0.0.1');
    org = await createOrg(t);
    other = await createOrg(t);
    const provider = await t.http
      .post('/api/v1/model-providers')
      .set(...bearer(org.keys.admin))
      .send({ name: 'scripted', kind: 'openai-compatible', baseUrl: model.url })
      .expect(201);
    const draft = { instructions: 'x', capabilities: [{ id: 'fx-run-tools' }], model: { provider: provider.body.id, name: 'scripted-1' } };
    mine = await publishAgent(t, org, 'mine', draft);
    theirs = await publishAgent(t, org, 'theirs', draft);
    foreign = await publishAgent(t, other, 'foreign', { instructions: 'x', capabilities: [] });
    pinned = (await createKey({ name: 'mine runtime', roles: ['agent'], agentIds: [mine.toUpperCase()] }).expect(201)).body;
  }, 180_000);
  afterAll(async () => {
    await t.close();
    await model.close();
  });

  function createKey(body: object) {
    return t.http
      .post(`/api/v1/orgs/${org.id}/api-keys`)
      .set(...bearer(org.keys.admin))
      .send(body);
  }
  const keyCount = async () =>
    (
      await t.http
        .get(`/api/v1/orgs/${org.id}/api-keys?limit=200`)
        .set(...bearer(org.keys.admin))
        .expect(200)
    ).body.items.length as number;
  const call = (agentId: string, token: string) =>
    t.http
      .post(`/api/v1/agents/${agentId}/tool-calls`)
      .set(...bearer(token))
      .send({ tool: 'lookup_order', arguments: { query: `o-${randomUUID()}` } });
  const startRun = (agentId: string, token: string) =>
    t.http
      .post(`/api/v1/agents/${agentId}/runs`)
      .set(...bearer(token))
      .send({ input: 'hello' });
  /** A problem document without what differs between any two answers (the request's id). */
  const problem = (res: { status: number; body: Record<string, unknown> }) => ({ status: res.status, code: res.body.code, detail: res.body.detail });

  it('is made with its agents, answers them, lists them and records them', async () => {
    expect(pinned).toMatchObject({ agentIds: [mine] });
    const listed = (
      await t.http
        .get(`/api/v1/orgs/${org.id}/api-keys?limit=200`)
        .set(...bearer(org.keys.admin))
        .expect(200)
    ).body.items as { id: string; agentIds: string[] | null }[];
    expect(listed.find((k) => k.id === pinned.id)?.agentIds).toEqual([mine]);
    expect(listed.find((k) => k.id === org.keyIds.agent)?.agentIds).toBeNull();
    const me = await t.http
      .get('/api/v1/me')
      .set(...bearer(pinned.token))
      .expect(200);
    expect(me.body).toMatchObject({ type: 'api_key', id: pinned.id, roles: ['agent'], agentIds: [mine] });
    const unpinnedMe = await t.http
      .get('/api/v1/me')
      .set(...bearer(org.keys.agent))
      .expect(200);
    expect(unpinnedMe.body.agentIds).toBeUndefined();
    const created = (
      await t.http
        .get(`/api/v1/audit-events?type=api_key.created&limit=200`)
        .set(...bearer(org.keys.admin))
        .expect(200)
    ).body.items.find((e: { target: { id: string } }) => e.target.id === pinned.id);
    expect(created.data).toEqual({ name: 'mine runtime', roles: ['agent'], agentIds: [mine] });
  });

  it('refuses agents it may not name, and any key but a runtime one, with the field named and no key made', async () => {
    const before = await keyCount();
    const refused = async (body: object, path: string, code: string) => {
      const res = await createKey({ name: 'refused', roles: ['agent'], ...body }).expect(400);
      expect(res.body.errors).toEqual(expect.arrayContaining([expect.objectContaining({ path, code })]));
    };
    await refused({ agentIds: [mine, foreign, randomUUID()] }, 'agentIds[1]', 'unknown_agent');
    await refused({ agentIds: [mine, randomUUID()] }, 'agentIds[1]', 'unknown_agent');
    await refused({ roles: ['agent', 'viewer'], agentIds: [mine] }, 'agentIds', 'agent_role_only');
    await refused({ roles: ['admin'], agentIds: [mine] }, 'agentIds', 'agent_role_only');
    await refused({ agentIds: [] }, 'agentIds', 'arrayMinSize');
    await refused({ agentIds: [mine, mine.toUpperCase()] }, 'agentIds', 'arrayUnique');
    await refused({ agentIds: Array.from({ length: 101 }, () => randomUUID()) }, 'agentIds', 'arrayMaxSize');
    await refused({ agentIds: ['__proto__'] }, 'agentIds[0]', 'isUuid');
    await refused({ agentIds: { 0: mine } }, 'agentIds', 'isArray');
    expect(await keyCount()).toBe(before);
    // null, as absent: every agent.
    const all = await createKey({ name: 'all agents', roles: ['agent'], agentIds: null }).expect(201);
    expect(all.body.agentIds).toBeNull();
  });

  it('meets any other agent of its organization as a missing one, wherever it names one', async () => {
    const missing = randomUUID();
    for (const path of ['versions', 'versions/latest', 'versions/1/tools', 'versions/1/manifest']) {
      await t.http
        .get(`/api/v1/agents/${mine}/${path}`)
        .set(...bearer(pinned.token))
        .expect(200);
      const refused = await t.http.get(`/api/v1/agents/${theirs}/${path}`).set(...bearer(pinned.token));
      const absent = await t.http.get(`/api/v1/agents/${missing}/${path}`).set(...bearer(pinned.token));
      expect(problem(refused)).toEqual(problem(absent));
      expect(refused.status).toBe(404);
    }
    expect((await call(mine.toUpperCase(), pinned.token).expect(200)).body.status).toBe('succeeded');
    expect(problem(await call(theirs, pinned.token))).toEqual(problem(await call(missing, pinned.token)));
    expect((await call(theirs, pinned.token)).status).toBe(404);
    // The unpinned runtime key still calls every agent.
    await call(theirs, org.keys.agent).expect(200);

    const init = {
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } },
    };
    expect((await mcpMessage(t, mine, pinned.token, init)).result.serverInfo).toBeDefined();
    const mcp = await t.http
      .post(`/api/v1/agents/${theirs}/mcp`)
      .set(...bearer(pinned.token))
      .set('Accept', 'application/json, text/event-stream')
      .send(init);
    expect(mcp.status).toBe(404);
    expect(mcp.body.code).toBe('not_found');

    await startRun(mine, pinned.token).expect(201);
    expect(problem(await startRun(theirs, pinned.token))).toEqual(problem(await startRun(missing, pinned.token)));
    expect((await startRun(theirs, pinned.token)).status).toBe(404);
  });

  it("reads only its agents' tool calls and runs; another agent's are missing to it", async () => {
    const ownCall = (await call(mine, pinned.token).expect(200)).body.id as string;
    const theirCall = (await call(theirs, org.keys.agent).expect(200)).body.id as string;
    const ownRun = (await startRun(mine, pinned.token).expect(201)).body.id as string;
    const theirRun = (await startRun(theirs, org.keys.agent).expect(201)).body.id as string;

    const calls = (
      await t.http
        .get('/api/v1/tool-calls?limit=200')
        .set(...bearer(pinned.token))
        .expect(200)
    ).body.items as { id: string; agentId: string }[];
    expect(calls.map((c) => c.id)).toContain(ownCall);
    expect(calls.every((c) => c.agentId === mine)).toBe(true);
    const asked = await t.http
      .get(`/api/v1/tool-calls?agentId=${theirs}`)
      .set(...bearer(pinned.token))
      .expect(200);
    expect(asked.body.items).toEqual([]);
    await t.http
      .get(`/api/v1/tool-calls/${ownCall}`)
      .set(...bearer(pinned.token))
      .expect(200);
    await t.http
      .get(`/api/v1/tool-calls/${ownCall}/result`)
      .set(...bearer(pinned.token))
      .expect(200);
    for (const path of [`tool-calls/${theirCall}`, `tool-calls/${theirCall}/result`, `runs/${theirRun}`, `runs/${theirRun}/events`]) {
      const res = await t.http.get(`/api/v1/${path}`).set(...bearer(pinned.token));
      expect([path, res.status, res.body.code]).toEqual([path, 404, 'not_found']);
    }
    const cancel = await t.http.post(`/api/v1/runs/${theirRun}/cancel`).set(...bearer(pinned.token));
    expect([cancel.status, cancel.body.code]).toEqual([404, 'not_found']);

    const runs = (
      await t.http
        .get('/api/v1/runs?limit=100')
        .set(...bearer(pinned.token))
        .expect(200)
    ).body.items as { id: string; agentId: string }[];
    expect(runs.map((r) => r.id)).toContain(ownRun);
    expect(runs.every((r) => r.agentId === mine)).toBe(true);
    await t.http
      .get(`/api/v1/runs/${ownRun}`)
      .set(...bearer(pinned.token))
      .expect(200);
    await t.http
      .post(`/api/v1/runs/${ownRun}/cancel`)
      .set(...bearer(pinned.token))
      .expect(200);

    // The unpinned key reads both agents' calls and runs, as before.
    const everyCall = (
      await t.http
        .get('/api/v1/tool-calls?limit=200')
        .set(...bearer(org.keys.agent))
        .expect(200)
    ).body.items as { id: string }[];
    expect(everyCall.map((c) => c.id)).toEqual(expect.arrayContaining([ownCall, theirCall]));
    await t.http
      .get(`/api/v1/runs/${theirRun}`)
      .set(...bearer(org.keys.agent))
      .expect(200);
  });
});
