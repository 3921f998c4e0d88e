import { bearer, mcpMessage } from './support/test-app';
import { countRows, hardeningWorld, HardeningWorld } from './support/hardening';

/**
 * Issue 13, governance gaps: a retired version and a disabled tool are refused at every entry
 * point (the tool-call endpoint, an approval being granted, MCP), decided by the one tool policy;
 * idempotency keys and per-run budgets are counted per agent.
 */

// Property runs make many requests; a loaded CI machine must not fail them on time alone.
jest.setTimeout(180_000);

describe('governance: retired versions, disabled tools, per-agent keys and budgets', () => {
  let h: HardeningWorld;
  let agentId: string;
  beforeAll(async () => {
    h = await hardeningWorld();
    agentId = h.agentId;
  }, 180_000);
  afterAll(() => h.t.close());

  const keys = () => h.world.org.keys;
  const callTool = (body: object, agent = agentId, headers: Record<string, string> = {}) => {
    let req = h.t.http.post(`/api/v1/agents/${agent}/tool-calls`).set(...bearer(keys().agent));
    for (const [k, v] of Object.entries(headers)) req = req.set(k, v);
    return req.send(body);
  };
  const mcp = (message: object, version?: number) => mcpMessage(h.t, agentId, keys().agent, message, version ? `?version=${version}` : '');
  async function publish(draft: object, agent = agentId): Promise<number> {
    await h.t.http
      .put(`/api/v1/agents/${agent}/draft`)
      .set(...bearer(keys().builder))
      .send(draft)
      .expect(200);
    const res = await h.t.http.post(`/api/v1/agents/${agent}/publish`).set(...bearer(keys().builder));
    expect([200, 201]).toContain(res.status);
    return res.body.version;
  }
  const events = async (type: string) =>
    (
      await h.t.http
        .get(`/api/v1/audit-events?type=${type}&limit=200`)
        .set(...bearer(keys().admin))
        .expect(200)
    ).body.items;
  const search = { tool: 'search_knowledge', arguments: { query: 'refunds' } };
  const spec = (instructions: string, extra: object = {}) => ({
    instructions,
    capabilities: [{ id: 'knowledge' }, { id: 'memory-write' }],
    resources: { knowledgeCollections: [h.world.ids.collectionId] },
    ...extra,
  });

  describe('POST /agents/{id}/versions/{v}/retire', () => {
    let pendingOnV1: string;
    it('refuses to retire the latest version (409 conflict), and lets only a builder retire', async () => {
      const v1 = await publish(spec('version one'));
      const remember = await callTool({ tool: 'remember', arguments: { content: 'Prefers French' }, version: v1 }).expect(202);
      pendingOnV1 = remember.body.approvalId;
      const latest = await h.t.http
        .post(`/api/v1/agents/${agentId}/versions/latest/retire`)
        .set(...bearer(keys().builder))
        .expect(409);
      expect(latest.body.code).toBe('conflict');
      await h.t.http
        .post(`/api/v1/agents/${agentId}/versions/${v1}/retire`)
        .set(...bearer(keys().viewer))
        .expect(403);
      await h.t.http
        .post(`/api/v1/agents/${agentId}/versions/${v1}/retire`)
        .set(...bearer(keys().agent))
        .expect(403);
    });

    it('retires an older version: 200 with retiredAt, audited once, and every entry point refuses it', async () => {
      const versions = (
        await h.t.http
          .get(`/api/v1/agents/${agentId}/versions`)
          .set(...bearer(keys().viewer))
          .expect(200)
      ).body.items;
      const old = versions[0].version;
      const latest = await publish(spec('version two: asks before searching', { toolApproval: { search_knowledge: 'required' } }));
      expect(latest).toBe(old + 1);
      const retired = await h.t.http
        .post(`/api/v1/agents/${agentId}/versions/${old}/retire`)
        .set(...bearer(keys().builder))
        .expect(200);
      expect(retired.body).toMatchObject({ agentId, version: old, retiredAt: expect.any(String) });
      const again = await h.t.http
        .post(`/api/v1/agents/${agentId}/versions/${old}/retire`)
        .set(...bearer(keys().builder))
        .expect(200);
      expect(again.body.retiredAt).toBe(retired.body.retiredAt);
      expect((await events('agent.version_retired')).filter((e: { data: { version: number } }) => e.data.version === old)).toHaveLength(1);
      const read = await h.t.http
        .get(`/api/v1/agents/${agentId}/versions/${old}`)
        .set(...bearer(keys().viewer))
        .expect(200);
      expect(read.body.retiredAt).toBe(retired.body.retiredAt);
      expect(
        (
          await h.t.http
            .get(`/api/v1/agents/${agentId}/versions/${latest}`)
            .set(...bearer(keys().viewer))
            .expect(200)
        ).body.retiredAt,
      ).toBeNull();

      // REST: the older version cannot be used to skip the newer version's toolApproval.
      const calls = await countRows(h.ds, 'tool_call');
      const rest = await callTool({ ...search, version: old }).expect(409);
      expect(rest.body.code).toBe('version_retired');
      expect(await countRows(h.ds, 'tool_call')).toBe(calls);
      expect((await events('tool_call.denied')).some((e: { data: { code: string } }) => e.data.code === 'version_retired')).toBe(true);
      // The latest version still runs (and asks, as it says).
      expect((await callTool(search)).status).toBe(202);

      // An approval asked on the retired version: approving runs nothing, the approval stays pending.
      const approve = await h.t.http
        .post(`/api/v1/approvals/${pendingOnV1}/approve`)
        .set(...bearer(keys().approver))
        .send({})
        .expect(409);
      expect(approve.body.code).toBe('version_retired');
      expect(
        (
          await h.t.http
            .get(`/api/v1/approvals/${pendingOnV1}`)
            .set(...bearer(keys().approver))
            .expect(200)
        ).body.status,
      ).toBe('pending');

      // MCP: nothing listed, a call refused.
      expect((await mcp({ jsonrpc: '2.0', id: 1, method: 'tools/list' }, old)).result.tools).toEqual([]);
      const mcpCall = await mcp({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'search_knowledge', arguments: { query: 'refunds' } } }, old);
      expect(mcpCall.result.isError).toBe(true);
      expect(JSON.stringify(mcpCall.result)).toContain('version_retired');
      expect(await countRows(h.ds, 'tool_call')).toBe(calls + 1);
    });
  });

  describe('PUT /tools/{capabilityId}/{toolId}/disabled', () => {
    it('only an admin switches; an undeclared tool is 404 unknown_tool', async () => {
      await h.t.http
        .put('/api/v1/tools/knowledge/search_knowledge/disabled')
        .set(...bearer(keys().builder))
        .send({ disabled: true })
        .expect(403);
      const unknown = await h.t.http
        .put('/api/v1/tools/knowledge/no_such_tool/disabled')
        .set(...bearer(keys().admin))
        .send({ disabled: true })
        .expect(404);
      expect(unknown.body.code).toBe('unknown_tool');
      await h.t.http
        .put('/api/v1/tools/nope/search_knowledge/disabled')
        .set(...bearer(keys().admin))
        .send({ disabled: true })
        .expect(404);
      await h.t.http
        .put('/api/v1/tools/knowledge/search_knowledge/disabled')
        .set(...bearer(keys().admin))
        .send({ disabled: 'yes' })
        .expect(400);
    });

    it("refuses every version's calls with 403 tool_disabled at every entry point, until enabled again", async () => {
      await publish(spec('version three'));
      const admin = bearer(keys().admin);
      // A pending approval of `remember`, asked before the switch.
      const pending = (await callTool({ tool: 'remember', arguments: { content: 'Likes tea' } }).expect(202)).body.approvalId;
      const off = await h.t.http
        .put('/api/v1/tools/memory-write/remember/disabled')
        .set(...admin)
        .send({ disabled: true, reason: 'INC-7' })
        .expect(200);
      expect(off.body).toMatchObject({ capabilityId: 'memory-write', toolId: 'remember', disabled: true, reason: 'INC-7', disabledAt: expect.any(String) });
      await h.t.http
        .put('/api/v1/tools/memory-write/remember/disabled')
        .set(...admin)
        .send({ disabled: true, reason: 'INC-7' })
        .expect(200);
      expect((await events('tool.disabled')).length).toBe(1);
      const listed = await h.t.http
        .get('/api/v1/tools/disabled')
        .set(...bearer(keys().viewer))
        .expect(200);
      expect(listed.body.items).toEqual([expect.objectContaining({ capabilityId: 'memory-write', toolId: 'remember' })]);

      const calls = await countRows(h.ds, 'tool_call');
      const refused = await callTool({ tool: 'remember', arguments: { content: 'x' } }).expect(403);
      expect(refused.body).toMatchObject({ code: 'tool_disabled', reason: 'INC-7' });
      expect(await countRows(h.ds, 'tool_call')).toBe(calls);
      const approve = await h.t.http
        .post(`/api/v1/approvals/${pending}/approve`)
        .set(...bearer(keys().approver))
        .send({})
        .expect(403);
      expect(approve.body.code).toBe('tool_disabled');
      const tools = (await mcp({ jsonrpc: '2.0', id: 1, method: 'tools/list' })).result.tools.map((t: { name: string }) => t.name);
      expect(tools).toContain('search_knowledge');
      expect(tools).not.toContain('remember');
      const mcpCall = await mcp({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'remember', arguments: { content: 'x' } } });
      expect(JSON.stringify(mcpCall.result)).toContain('tool_disabled');
      // Other tools run.
      expect((await callTool({ tool: 'search_knowledge', arguments: { query: 'refunds' } })).status).toBe(200);

      // A new reason for a tool already off is a change, recorded with the reason it replaces; the time it went off stays.
      const reasoned = await h.t.http
        .put('/api/v1/tools/memory-write/remember/disabled')
        .set(...admin)
        .send({ disabled: true, reason: 'INC-7: leak confirmed' })
        .expect(200);
      expect(reasoned.body).toMatchObject({ reason: 'INC-7: leak confirmed', disabledAt: off.body.disabledAt });
      const disabledEvents = await events('tool.disabled');
      expect(disabledEvents.map((e: { data: object }) => e.data)).toEqual(
        expect.arrayContaining([
          { capabilityId: 'memory-write', toolId: 'remember', reason: 'INC-7' },
          { capabilityId: 'memory-write', toolId: 'remember', reason: 'INC-7: leak confirmed', previousReason: 'INC-7' },
        ]),
      );
      expect(disabledEvents).toHaveLength(2);
      expect((await callTool({ tool: 'remember', arguments: { content: 'x' } }).expect(403)).body.reason).toBe('INC-7: leak confirmed');

      await h.t.http
        .put('/api/v1/tools/memory-write/remember/disabled')
        .set(...admin)
        .send({ disabled: false })
        .expect(200);
      expect((await events('tool.enabled')).length).toBe(1);
      const approved = await h.t.http
        .post(`/api/v1/approvals/${pending}/approve`)
        .set(...bearer(keys().approver))
        .send({})
        .expect(200);
      expect(approved.body.toolCall.status).toBe('succeeded');
    });

    it('two admins disabling a tool at once: one switches it off, the other changes the reason, its event naming the reason it replaced', async () => {
      const put = (reason: string) =>
        h.t.http
          .put('/api/v1/tools/memory-write/forget/disabled')
          .set(...bearer(keys().admin))
          .send({ disabled: true, reason })
          .expect(200);
      const before = (await events('tool.disabled')).length;
      await Promise.all([put('INC-A'), put('INC-B')]);
      const mine = (await events('tool.disabled'))
        .slice(0, (await events('tool.disabled')).length - before)
        .filter((e: { data: { toolId: string } }) => e.data.toolId === 'forget')
        .map((e: { data: { reason: string; previousReason?: string } }) => e.data);
      expect(mine).toHaveLength(2);
      const off = mine.find((d: { previousReason?: string }) => !('previousReason' in d));
      const changed = mine.find((d: { previousReason?: string }) => 'previousReason' in d);
      expect(changed.previousReason).toBe(off.reason);
      await h.t.http
        .put('/api/v1/tools/memory-write/forget/disabled')
        .set(...bearer(keys().admin))
        .send({ disabled: false })
        .expect(200);
    });

    it('takes an MCP tool id (<connection>/<tool>, URL-encoded)', async () => {
      const res = await h.t.http
        .put(`/api/v1/tools/mcp/${encodeURIComponent('github/create_issue')}/disabled`)
        .set(...bearer(keys().admin))
        .send({ disabled: true })
        .expect(200);
      expect(res.body).toMatchObject({ capabilityId: 'mcp', toolId: 'github/create_issue', disabled: true });
      await h.t.http
        .put(`/api/v1/tools/mcp/${encodeURIComponent('github/create_issue')}/disabled`)
        .set(...bearer(keys().admin))
        .send({ disabled: false })
        .expect(200);
    });

    it('pages GET /tools/disabled like every list, and refuses a bad limit, cursor or unknown parameter', async () => {
      // limit, cursor and unknown parameters were ignored: ?limit=1 answered every switch. Code point
      // order whatever the database's collation (en_US puts `a` before `B`; the cursor compares as C).
      const ids = [
        'mcp/zz%2Fc',
        'mcp/zz%2Fa',
        'mcp/zz%2FB',
        `mcp/zz%2F${encodeURIComponent('\u{1F600}')}`,
        `mcp/zz%2F${encodeURIComponent('\uFF21')}`,
        'memory-write/forget',
      ];
      const put = (id: string, disabled: boolean) =>
        h.t.http
          .put(`/api/v1/tools/${id}/disabled`)
          .set(...bearer(keys().admin))
          .send({ disabled })
          .expect(200);
      for (const id of ids) await put(id, true);
      const list = (query: string) => h.t.http.get(`/api/v1/tools/disabled${query}`).set(...bearer(keys().viewer));
      const seen: string[] = [];
      let cursor: string | null = null;
      do {
        const page: { body: { items: { capabilityId: string; toolId: string }[]; nextCursor: string | null } } = await list(
          `?limit=1${cursor ? `&cursor=${cursor}` : ''}`,
        ).expect(200);
        expect(page.body.items).toHaveLength(1);
        seen.push(...page.body.items.map((i: { capabilityId: string; toolId: string }) => `${i.capabilityId}/${i.toolId}`));
        cursor = page.body.nextCursor;
      } while (cursor);
      expect(seen).toEqual(['mcp/zz/B', 'mcp/zz/a', 'mcp/zz/c', 'mcp/zz/\uFF21', 'mcp/zz/\u{1F600}', 'memory-write/forget']);
      const all = await list('').expect(200);
      expect(all.body).toEqual({ items: expect.any(Array), nextCursor: null });
      for (const [query, path] of [
        ['?limit=0', 'limit'],
        ['?limit=abc', 'limit'],
        ['?limit=201', 'limit'],
        ['?cursor=!!!', 'cursor'],
        ['?zzz=1', 'zzz'],
      ]) {
        const res = await list(query).expect(400);
        expect(res.body).toMatchObject({ code: 'invalid_request', errors: expect.arrayContaining([expect.objectContaining({ path })]) });
      }
      for (const id of ids) await put(id, false);
    });

    it('with more switches than the key lookup carries, each call still sees its own; past 1,000 a new one is 409 and nothing is stored', async () => {
      // Planted 3,000 at 2.5 KB each, every organization's tool calls on the node waited seconds behind the key lookups that carried them.
      await h.ds.query(
        `INSERT INTO tool_disabled (org_id, capability_id, tool_id, reason, disabled_by)
         SELECT $1, 'mcp', 'planted/tool-' || i, repeat('r', 500), 'test' FROM generate_series(1, 999) AS i`,
        [h.world.org.id],
      );
      try {
        const put = (id: string, body: object) =>
          h.t.http
            .put(`/api/v1/tools/${id}/disabled`)
            .set(...bearer(keys().admin))
            .send(body);
        expect((await callTool(search)).status).toBe(200);
        await put('memory-write/remember', { disabled: true, reason: 'INC-9' }).expect(200);
        expect((await callTool({ tool: 'remember', arguments: { content: 'x' } }).expect(403)).body).toMatchObject({ code: 'tool_disabled', reason: 'INC-9' });
        expect((await callTool(search)).status).toBe(200);
        const tools = (await mcp({ jsonrpc: '2.0', id: 3, method: 'tools/list' })).result.tools.map((t: { name: string }) => t.name);
        expect(tools).toContain('search_knowledge');
        expect(tools).not.toContain('remember');

        const before = await countRows(h.ds, 'tool_disabled');
        const full = await put(`mcp/${encodeURIComponent('planted/one-more')}`, { disabled: true }).expect(409);
        expect(full.body).toMatchObject({ code: 'conflict', detail: expect.stringContaining('1000 tools disabled') });
        expect(await countRows(h.ds, 'tool_disabled')).toBe(before);
        // A switch already off takes a new reason; one turned on makes room.
        await put('memory-write/remember', { disabled: true, reason: 'INC-9b' }).expect(200);
        await put('memory-write/remember', { disabled: false }).expect(200);
        await put(`mcp/${encodeURIComponent('planted/one-more')}`, { disabled: true }).expect(200);
      } finally {
        await h.ds.query(`DELETE FROM tool_disabled WHERE org_id = $1 AND capability_id = 'mcp' AND tool_id LIKE 'planted/%'`, [h.world.org.id]);
      }
    });
  });

  describe('idempotency keys and run budgets are per agent', () => {
    it('the same Idempotency-Key for another agent is another key; the same run id for another agent another run', async () => {
      const other = await h.t.http
        .post('/api/v1/agents')
        .set(...bearer(keys().builder))
        .send({ slug: 'other-agent', name: 'Other' })
        .expect(201);
      const limited = {
        capabilities: [{ id: 'knowledge' }, { id: 'budget', config: { maxToolCallsPerRun: 1 } }],
        resources: { knowledgeCollections: [h.world.ids.collectionId] },
      };
      await publish({ instructions: 'limited', ...limited });
      await publish({ instructions: 'other', ...limited }, other.body.id);

      const first = await callTool(search, agentId, { 'Idempotency-Key': 'shared-key' }).expect(200);
      const second = await callTool(search, other.body.id, { 'Idempotency-Key': 'shared-key' }).expect(200);
      expect(second.body.id).not.toBe(first.body.id);
      expect(second.body.agentId).toBe(other.body.id);
      const replay = await callTool(search, agentId, { 'Idempotency-Key': 'shared-key' }).expect(200);
      expect(replay.body.id).toBe(first.body.id);

      await callTool({ ...search, runId: 'shared-run' }, agentId).expect(200);
      await callTool({ ...search, runId: 'shared-run' }, other.body.id).expect(200);
      const over = await callTool({ ...search, runId: 'shared-run' }, agentId).expect(429);
      expect(over.body.code).toBe('budget_exceeded');
    });
  });
});
