import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResult, ErrorCode, LATEST_PROTOCOL_VERSION, Progress } from '@modelcontextprotocol/sdk/types.js';
import { NestFastifyApplication } from '@nestjs/platform-fastify';
import fc from 'fast-check';
import { randomUUID } from 'node:crypto';
import request from 'supertest';
import { createApp } from '../src/app.factory';
import { CALL_META, RUN_ID_META } from '../src/mcp/mcp-shapes';
import { FX_MCP_CRM_SCOPE, FX_MCP_DRIFTING, McpFixturesModule, mcpFixtureRuns, mcpRunsTagged, NOTES_GUIDANCE } from './fixtures/mcp-fixtures.module';
import { bearer, createOrg, createTestApp, TestApp, TestOrg } from './support/test-app';

/**
 * Issue 9: every published agent is an MCP server. Driven with the SDK's own Client and
 * StreamableHTTPClientTransport against the app listening on a real port, so what is tested is
 * what Claude Desktop, the inspector or the Agents SDK would meet.
 */
describe('MCP endpoint (e2e)', () => {
  let t: TestApp;
  let base: string;
  let org: TestOrg;
  let agentId: string;
  const clients: Client[] = [];
  const WAIT_SECONDS = 30;
  const INSTRUCTIONS = "You keep the support team's notes.";

  beforeAll(async () => {
    t = await createTestApp({ imports: [McpFixturesModule], config: { mcpApprovalWaitSeconds: WAIT_SECONDS } });
    await t.app.listen(0, '127.0.0.1');
    base = await t.app.getUrl();
    org = await createOrg(t, [FX_MCP_CRM_SCOPE]);
    agentId = await publishedAgent(org, 'Support notes', {
      instructions: INSTRUCTIONS,
      capabilities: [{ id: 'fx-mcp-notes' }, { id: 'fx-mcp-crm' }],
      toolOverrides: {
        'fx-mcp-search': { name: 'search_notes', description: 'Search the team notes by keyword.' },
        'fx-mcp-purge': { name: 'purgeNotes' },
      },
    });
  });
  afterAll(async () => {
    await Promise.all(clients.map((c) => c.close()));
    await t.close();
  });

  let slugs = 0;
  async function publishedAgent(o: TestOrg, name: string, draft: object): Promise<string> {
    const a = await t.http
      .post('/api/v1/agents')
      .set(...bearer(o.keys.builder))
      .send({ slug: `mcp-${++slugs}`, name })
      .expect(201);
    await t.http
      .put(`/api/v1/agents/${a.body.id}/draft`)
      .set(...bearer(o.keys.builder))
      .send(draft)
      .expect(200);
    await t.http
      .post(`/api/v1/agents/${a.body.id}/publish`)
      .set(...bearer(o.keys.builder))
      .expect(201);
    return a.body.id;
  }

  function endpoint(agent: string, query = ''): URL {
    return new URL(`${base}/api/v1/agents/${agent}/mcp${query}`);
  }

  async function connect(token: string, agent = agentId, query = ''): Promise<Client> {
    const client = new Client({ name: 'mcp-e2e', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(endpoint(agent, query), { requestInit: { headers: { Authorization: `Bearer ${token}` } } }));
    clients.push(client);
    return client;
  }

  /** What connecting says when the endpoint refuses before MCP starts: the SDK's error carries the HTTP status. */
  async function refusedConnect(token: string, agent = agentId, query = ''): Promise<number> {
    const client = new Client({ name: 'mcp-e2e', version: '1.0.0' });
    const error = await client
      .connect(new StreamableHTTPClientTransport(endpoint(agent, query), { requestInit: { headers: { Authorization: `Bearer ${token}` } } }))
      .then(
        () => undefined,
        (err: { code?: number }) => err,
      );
    await client.close();
    return error?.code ?? 0;
  }

  const INITIALIZE = {
    jsonrpc: '2.0',
    id: 1,
    method: 'initialize',
    params: { protocolVersion: LATEST_PROTOCOL_VERSION, capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
  };

  function rawPost(token: string | undefined, agent = agentId, query = '', body: unknown = INITIALIZE) {
    const req = t.http.post(`/api/v1/agents/${agent}/mcp${query}`).set('Accept', 'application/json, text/event-stream').set('Content-Type', 'application/json');
    if (token) req.set(...bearer(token));
    return req.send(JSON.stringify(body));
  }

  function metaOf(result: unknown): { id: string; status: string; approvalId?: string; code?: string } {
    return (result as CallToolResult)._meta![CALL_META] as { id: string; status: string; approvalId?: string; code?: string };
  }

  function textOf(result: unknown): string {
    return (result as CallToolResult).content.map((c) => (c.type === 'text' ? c.text : '')).join('\n');
  }

  async function eventsOf(type: string): Promise<{ target: { id: string }; actor: { id: string }; data: Record<string, unknown> }[]> {
    const res = await t.http
      .get(`/api/v1/audit-events?type=${type}&limit=200`)
      .set(...bearer(org.keys.admin))
      .expect(200);
    return res.body.items;
  }

  async function approvalsTagged(tag: string, o = org): Promise<{ id: string; status: string; toolCallId: string }[]> {
    const res = await t.http
      .get(`/api/v1/approvals?limit=200`)
      .set(...bearer(o.keys.approver))
      .expect(200);
    return res.body.items.filter((a: { arguments: { tag?: string } }) => a.arguments.tag === tag);
  }

  /** Starts a call that will wait for approval, and resolves once the server says it waits (its first progress notification). */
  function waitingCall(client: Client, name: string, args: Record<string, unknown>) {
    const progress: Progress[] = [];
    let started!: () => void;
    const waiting = new Promise<void>((resolve) => (started = resolve));
    const result = client.callTool({ name, arguments: args }, undefined, {
      timeout: 120_000,
      onprogress: (p) => {
        progress.push(p);
        started();
      },
    });
    return { result, waiting, progress };
  }

  describe('initialize', () => {
    it("answers with the agent's name, the version, and the version's system prompt as instructions", async () => {
      const client = await connect(org.keys.agent);
      expect(client.getServerVersion()).toEqual({ name: 'Support notes', version: '1' });
      const manifest = await t.http
        .get(`/api/v1/agents/${agentId}/versions/latest/manifest`)
        .set(...bearer(org.keys.agent))
        .expect(200);
      expect(client.getInstructions()).toBe(manifest.body.systemPrompt);
      expect(client.getInstructions()).toBe(`${INSTRUCTIONS}\n\n${NOTES_GUIDANCE}`);
      expect(client.getServerCapabilities()).toEqual({ tools: { listChanged: false } });
    });

    it('serves statelessly: no session id, and the request id comes back', async () => {
      const res = await rawPost(org.keys.agent).set('X-Request-Id', 'mcp-e2e-req-1').expect(200);
      expect(res.headers['mcp-session-id']).toBeUndefined();
      expect(res.headers['content-type']).toMatch(/^text\/event-stream/);
      expect(res.headers['x-request-id']).toBe('mcp-e2e-req-1');
      const message = JSON.parse(/^data: (.*)$/m.exec(res.text)![1]);
      expect(message).toMatchObject({
        jsonrpc: '2.0',
        id: 1,
        result: { serverInfo: { name: 'Support notes', version: '1' }, instructions: `${INSTRUCTIONS}\n\n${NOTES_GUIDANCE}` },
      });
    });
  });

  describe('tools/list', () => {
    it('lists exactly the offered tools: names and descriptions after overrides, input schemas as JSON Schema', async () => {
      const client = await connect(org.keys.agent);
      const { tools } = await client.listTools();
      const offered = (
        await t.http
          .get(`/api/v1/agents/${agentId}/versions/latest/tools`)
          .set(...bearer(org.keys.agent))
          .expect(200)
      ).body.items as {
        name: string;
        description: string;
        inputSchema: Record<string, unknown>;
      }[];
      expect(tools.map((x) => x.name)).toEqual(offered.map((o) => o.name));
      expect(tools.map((x) => x.name)).toEqual([
        'search_notes',
        'fx-mcp-list',
        'fx-mcp-greet',
        'fx-mcp-fail',
        'fx-mcp-write',
        'purgeNotes',
        'fx-mcp-crm-lookup',
      ]);
      for (const tool of tools) {
        const o = offered.find((x) => x.name === tool.name)!;
        const { $schema, ...schema } = o.inputSchema;
        expect($schema).toBe('https://json-schema.org/draft/2020-12/schema');
        expect(tool.description).toBe(o.description);
        expect(tool.inputSchema).toEqual(schema);
      }
      const search = tools.find((x) => x.name === 'search_notes')!;
      expect(search.description).toBe('Search the team notes by keyword.');
      expect(search.inputSchema).toMatchObject({
        type: 'object',
        properties: { query: { type: 'string', minLength: 1, maxLength: 200 }, limit: { type: 'integer', default: 5 } },
        required: ['query'],
        additionalProperties: false,
      });
    });

    it('annotates each tool from its risk and declaration, with a title; a declared output shape is its outputSchema', async () => {
      const client = await connect(org.keys.agent);
      const byName = new Map((await client.listTools()).tools.map((x) => [x.name, x]));
      const hints = (readOnlyHint: boolean, destructiveHint: boolean, idempotentHint: boolean, openWorldHint: boolean) => ({
        readOnlyHint,
        destructiveHint,
        idempotentHint,
        openWorldHint,
      });
      expect(byName.get('search_notes')!.annotations).toEqual({ title: 'Search notes', ...hints(true, false, true, false) });
      expect(byName.get('fx-mcp-write')!.annotations).toEqual({ title: 'Fx mcp write', ...hints(false, false, false, false) });
      expect(byName.get('purgeNotes')!.annotations).toEqual({ title: 'Purge notes', ...hints(false, true, true, false) });
      expect(byName.get('fx-mcp-crm-lookup')!.annotations).toEqual({ title: 'Fx mcp crm lookup', ...hints(true, false, true, true) });
      expect(byName.get('purgeNotes')!.title).toBe('Purge notes');
      expect(byName.get('purgeNotes')!._meta).toEqual({
        'capability-platform/tool': { capabilityId: 'fx-mcp-notes', toolId: 'fx-mcp-purge', risk: 'destructive', requiresApproval: true },
      });
      expect(byName.get('search_notes')!.outputSchema).toMatchObject({
        type: 'object',
        properties: { query: { type: 'string' }, limit: { type: 'integer' }, hits: { type: 'array', items: { properties: { title: { type: 'string' } } } } },
        required: ['query', 'limit', 'hits'],
      });
      expect(byName.get('search_notes')!.outputSchema).not.toHaveProperty('$schema');
      // Declared, but a call waiting for approval has no structured result to conform to it.
      expect(byName.get('fx-mcp-write')!.outputSchema).toBeUndefined();
      expect(byName.get('fx-mcp-greet')!.outputSchema).toBeUndefined();
    });

    it('?version=N pins a version; without it each request follows the latest', async () => {
      const notes = { instructions: 'Version one.', capabilities: [{ id: 'fx-mcp-notes' }], toolOverrides: { 'fx-mcp-search': { name: 'search_notes' } } };
      const pinned = await publishedAgent(org, 'Pinned', notes);
      const latest = await connect(org.keys.agent, pinned);
      await t.http
        .put(`/api/v1/agents/${pinned}/draft`)
        .set(...bearer(org.keys.builder))
        .send({ ...notes, instructions: 'Version two.', toolOverrides: { 'fx-mcp-search': { name: 'find_notes' } } })
        .expect(200);
      await t.http
        .post(`/api/v1/agents/${pinned}/publish`)
        .set(...bearer(org.keys.builder))
        .expect(201);

      const v1 = await connect(org.keys.agent, pinned, '?version=1');
      expect(v1.getServerVersion()).toEqual({ name: 'Pinned', version: '1' });
      expect(v1.getInstructions()).toMatch(/^Version one\./);
      expect((await v1.listTools()).tools.map((x) => x.name)).toContain('search_notes');
      const v2 = await connect(org.keys.agent, pinned);
      expect(v2.getServerVersion()).toEqual({ name: 'Pinned', version: '2' });
      expect(v2.getInstructions()).toMatch(/^Version two\./);
      // A client connected before the publish sees the new version on its next request: nothing is kept between requests.
      expect((await latest.listTools()).tools.map((x) => x.name)).toContain('find_notes');

      const onV1 = await v1.callTool({ name: 'search_notes', arguments: { query: randomUUID() } });
      const call = await t.http
        .get(`/api/v1/tool-calls/${metaOf(onV1).id}`)
        .set(...bearer(org.keys.agent))
        .expect(200);
      expect(call.body).toMatchObject({ version: 1, tool: 'search_notes', entryPoint: 'mcp' });
      expect((await v2.callTool({ name: 'search_notes', arguments: { query: 'x' } }).catch((e: { code: number }) => e)).code).toBe(ErrorCode.InvalidParams);
    });
  });

  describe('tools/call', () => {
    it('runs a read-only tool through the executor: text and structuredContent, recorded and audited with entry point mcp', async () => {
      const client = await connect(org.keys.agent);
      const query = randomUUID();
      const result = await client.callTool({ name: 'search_notes', arguments: { query } });
      const expected = { query, limit: 5, hits: [{ title: `About ${query}` }] };
      expect(result.isError).toBeFalsy();
      expect(result.structuredContent).toEqual(expected);
      expect(result.content).toEqual([{ type: 'text', text: JSON.stringify(expected) }]);

      const meta = metaOf(result);
      expect(meta.status).toBe('succeeded');
      const call = await t.http
        .get(`/api/v1/tool-calls/${meta.id}`)
        .set(...bearer(org.keys.viewer))
        .expect(200);
      expect(call.body).toMatchObject({
        agentId,
        version: 1,
        tool: 'search_notes',
        capabilityId: 'fx-mcp-notes',
        toolId: 'fx-mcp-search',
        arguments: { query, limit: 5 },
        status: 'succeeded',
        result: expected,
        entryPoint: 'mcp',
        requestedBy: org.keyIds.agent,
      });
      expect(mcpRunsTagged(query)).toEqual([
        {
          tool: 'fx-mcp-search',
          args: { query, limit: 5 },
          ctx: { orgId: org.id, agentId, version: 1, callId: meta.id, runId: null, effect: expect.any(Function) },
        },
      ]);
      const requested = (await eventsOf('tool_call.requested')).find((e) => e.target.id === meta.id)!;
      expect(requested).toMatchObject({
        actor: { id: org.keyIds.agent },
        data: { entryPoint: 'mcp', tool: 'search_notes', argumentsHash: call.body.argumentsHash },
      });
      expect((await eventsOf('tool_call.succeeded')).some((e) => e.target.id === meta.id)).toBe(true);
    });

    it('answers text as text, and an array as structuredContent { items }', async () => {
      const client = await connect(org.keys.agent);
      const tag = randomUUID();
      const greeting = await client.callTool({ name: 'fx-mcp-greet', arguments: { tag } });
      expect(greeting.content).toEqual([{ type: 'text', text: `Hello, ${tag}!` }]);
      expect(greeting.structuredContent).toBeUndefined();
      const list = await client.callTool({ name: 'fx-mcp-list', arguments: { tag } });
      expect(list.structuredContent).toEqual({
        items: [
          { tag, n: 1 },
          { tag, n: 2 },
        ],
      });
      expect(JSON.parse(textOf(list))).toEqual([
        { tag, n: 1 },
        { tag, n: 2 },
      ]);
    });

    it("a tool's failure is isError with the tool's message, recorded as failed", async () => {
      const client = await connect(org.keys.agent);
      const tag = randomUUID();
      const result = await client.callTool({ name: 'fx-mcp-fail', arguments: { tag } });
      expect(result.isError).toBe(true);
      expect(textOf(result)).toBe(`No note is tagged "${tag}". Search the notes first and use a tag the search returns. (note_not_found)`);
      const call = await t.http
        .get(`/api/v1/tool-calls/${metaOf(result).id}`)
        .set(...bearer(org.keys.agent))
        .expect(200);
      expect(call.body).toMatchObject({ status: 'failed', entryPoint: 'mcp', error: { code: 'note_not_found' } });
    });

    it('invalid arguments: isError naming each field; nothing runs; audited as denied', async () => {
      const client = await connect(org.keys.agent);
      const tag = randomUUID();
      const before = mcpFixtureRuns.length;
      const bad = await client.callTool({ name: 'fx-mcp-write', arguments: { tag, text: '', extra: 1 } });
      expect(bad.isError).toBe(true);
      expect(textOf(bad)).toMatch(/^The arguments are invalid, so nothing ran\. Fix these and call again:\n/);
      expect(textOf(bad)).toContain('- text: text must be longer than or equal to 1 characters');
      expect(textOf(bad)).toContain('- extra: property extra is not allowed');
      expect(metaOf(bad)).toMatchObject({ status: 'refused', code: 'invalid_arguments' });

      const missing = await client.callTool({ name: 'search_notes' });
      expect(missing.isError).toBe(true);
      expect(textOf(missing)).toContain('- query: query must be a string');
      expect(mcpFixtureRuns.length).toBe(before);
      expect(await approvalsTagged(tag)).toEqual([]);
      const denied = (await eventsOf('tool_call.denied')).filter((e) => e.data.tool === 'fx-mcp-write' && e.data.code === 'invalid_arguments');
      expect(denied[0]).toMatchObject({ actor: { id: org.keyIds.agent }, data: { entryPoint: 'mcp', agentId } });
    });

    it('a name the version does not offer is a protocol error (the original name of an overridden tool too)', async () => {
      const client = await connect(org.keys.agent);
      for (const name of ['nope', 'fx-mcp-search']) {
        const err = await client.callTool({ name, arguments: {} }).then(
          () => undefined,
          (e: { code: number; message: string }) => e,
        );
        expect(err).toMatchObject({ code: ErrorCode.InvalidParams });
        expect(err!.message).toContain(`offers no tool named "${name}"`);
      }
    });
  });

  describe('approvals', () => {
    it("a mutating call approved over REST while the MCP call waits answers with the tool's result; progress while waiting", async () => {
      const client = await connect(org.keys.agent);
      const tag = randomUUID();
      const call = waitingCall(client, 'fx-mcp-write', { tag, text: 'Refund approved.' });
      await call.waiting;
      expect(mcpRunsTagged(tag)).toEqual([]);
      const [approval] = await approvalsTagged(tag);
      expect(approval).toMatchObject({ status: 'pending' });
      expect(call.progress[0]).toEqual({
        progress: 0,
        total: WAIT_SECONDS,
        message: `Waiting up to ${WAIT_SECONDS} s for a person to decide on approval ${approval.id}.`,
      });

      await t.http
        .post(`/api/v1/approvals/${approval.id}/approve`)
        .set(...bearer(org.keys.approver))
        .send({ note: 'ok' })
        .expect(200);
      const result = await call.result;
      expect(result.isError).toBeFalsy();
      expect(result.structuredContent).toEqual({ written: tag, text: 'Refund approved.' });
      expect(metaOf(result)).toEqual({ id: approval.toolCallId, status: 'succeeded', approvalId: approval.id });
      expect(mcpRunsTagged(tag)).toHaveLength(1);
      const stored = await t.http
        .get(`/api/v1/tool-calls/${approval.toolCallId}`)
        .set(...bearer(org.keys.agent))
        .expect(200);
      expect(stored.body).toMatchObject({ status: 'succeeded', entryPoint: 'mcp', requestedBy: org.keyIds.agent });
      const approved = (await eventsOf('approval.approved')).find((e) => e.target.id === approval.id)!;
      expect(approved.actor.id).toBe(org.keyIds.approver);
    });

    it('a destructive call rejected while the MCP call waits is isError with the reason; nothing runs', async () => {
      const client = await connect(org.keys.agent);
      const tag = randomUUID();
      const call = waitingCall(client, 'purgeNotes', { tag });
      await call.waiting;
      const [approval] = await approvalsTagged(tag);
      await t.http
        .post(`/api/v1/approvals/${approval.id}/reject`)
        .set(...bearer(org.keys.approver))
        .send({ reason: 'Not during the audit.' })
        .expect(200);
      const result = await call.result;
      expect(result.isError).toBe(true);
      expect(textOf(result)).toBe('A person rejected this call, so it did not run. Their reason: Not during the audit.');
      expect(metaOf(result)).toMatchObject({ status: 'rejected', approvalId: approval.id });
      expect(mcpRunsTagged(tag)).toEqual([]);
    });

    it("an edited approval says so in the result, so the model's history stays true", async () => {
      const client = await connect(org.keys.agent);
      const tag = randomUUID();
      const call = waitingCall(client, 'fx-mcp-write', { tag, text: 'Refund 500.' });
      await call.waiting;
      const [approval] = await approvalsTagged(tag);
      await t.http
        .post(`/api/v1/approvals/${approval.id}/approve`)
        .set(...bearer(org.keys.approver))
        .send({ arguments: { tag, text: 'Refund 50.' } })
        .expect(200);
      const result = await call.result;
      expect(result.structuredContent).toEqual({ written: tag, text: 'Refund 50.' });
      expect(textOf(result)).toContain(`It ran with: ${JSON.stringify({ tag, text: 'Refund 50.' })}`);
    });

    describe('when the wait ends first', () => {
      // AppConfig is provided by value and read per call, so the wait can be shortened for these tests.
      beforeAll(() => {
        t.config.mcpApprovalWaitSeconds = 1;
      });
      afterAll(() => {
        t.config.mcpApprovalWaitSeconds = WAIT_SECONDS;
      });

      it('answers "still pending" naming the approval; the same call again hands over the decision, never a second approval', async () => {
        const client = await connect(org.keys.agent);
        const tag = randomUUID();
        const args = { tag, text: 'Close the ticket.' };
        const first = await client.callTool({ name: 'fx-mcp-write', arguments: args });
        const pending = metaOf(first);
        expect(first.isError).toBeFalsy();
        expect(pending).toMatchObject({ status: 'pending_approval', approvalId: expect.any(String) });
        const approval = await t.http
          .get(`/api/v1/approvals/${pending.approvalId}`)
          .set(...bearer(org.keys.approver))
          .expect(200);
        expect(textOf(first)).toBe(
          `This call needs a person's approval and is still waiting for it (approval ${pending.approvalId}, which expires at ${approval.body.expiresAt}). ` +
            'Nothing has run. Call the tool again later with exactly the same arguments to get the decision; that does not ask again.',
        );

        // Asked again while nobody has decided: the same call, the same approval.
        const again = await client.callTool({ name: 'fx-mcp-write', arguments: { text: 'Close the ticket.', tag } });
        expect(metaOf(again)).toEqual(pending);
        expect(await approvalsTagged(tag)).toHaveLength(1);

        await t.http
          .post(`/api/v1/approvals/${pending.approvalId}/approve`)
          .set(...bearer(org.keys.approver))
          .send({})
          .expect(200);
        const decided = await client.callTool({ name: 'fx-mcp-write', arguments: args });
        expect(decided.structuredContent).toEqual({ written: tag, text: 'Close the ticket.' });
        expect(metaOf(decided)).toEqual({ id: pending.id, status: 'succeeded', approvalId: pending.approvalId });
        expect(mcpRunsTagged(tag)).toHaveLength(1);

        // The decision is handed over once: the same call after that is a new request for approval.
        const later = await client.callTool({ name: 'fx-mcp-write', arguments: args });
        expect(metaOf(later)).toMatchObject({ status: 'pending_approval' });
        expect(metaOf(later).approvalId).not.toBe(pending.approvalId);
        expect(await approvalsTagged(tag)).toHaveLength(2);
        expect(mcpRunsTagged(tag)).toHaveLength(1);
      });

      it('the same call asked several times at once: one call, one approval, each answer naming it', async () => {
        const client = await connect(org.keys.agent);
        for (let round = 0; round < 3; round++) {
          const tag = randomUUID();
          const answers = await Promise.all(
            Array.from({ length: 8 }, () => client.callTool({ name: 'fx-mcp-write', arguments: { tag, text: 'Close the ticket.' } })),
          );
          const approvals = await approvalsTagged(tag);
          expect(approvals).toHaveLength(1);
          expect(new Set(answers.map((a) => JSON.stringify(metaOf(a))))).toEqual(
            new Set([JSON.stringify({ id: approvals[0].toolCallId, status: 'pending_approval', approvalId: approvals[0].id })]),
          );
        }
      });

      it('a decision is handed over to every identical request held on the call before it, never asked for again', async () => {
        const client = await connect(org.keys.agent);
        // Held long enough for the decision to come first on a loaded machine: a second's wait ended
        // before the approval on CI, and each request rightly answered "still pending".
        t.config.mcpApprovalWaitSeconds = 30;
        try {
          for (let round = 0; round < 3; round++) {
            const tag = randomUUID();
            const args = { tag, text: 'Close the ticket.' };
            // What a client that asks again after its own timeout sends: five requests held on one call.
            const held = Array.from({ length: 5 }, () => waitingCall(client, 'fx-mcp-write', args));
            await Promise.all(held.map((h) => h.waiting));
            const [approval] = await approvalsTagged(tag);
            await t.http
              .post(`/api/v1/approvals/${approval.id}/approve`)
              .set(...bearer(org.keys.approver))
              .send({})
              .expect(200);
            const answers = (await Promise.all(held.map((h) => h.result))).map(metaOf);
            // Before, one to three of them got the outcome and the rest asked a person again for the same call.
            expect(answers).toEqual(Array.from({ length: 5 }, () => ({ id: approval.toolCallId, status: 'succeeded', approvalId: approval.id })));
            expect(await approvalsTagged(tag)).toHaveLength(1);
            expect(mcpRunsTagged(tag)).toHaveLength(1);
            // Handed over: the same call after that is a new one (asked with the describe's short wait).
            t.config.mcpApprovalWaitSeconds = 1;
            expect(metaOf(await client.callTool({ name: 'fx-mcp-write', arguments: args }))).toMatchObject({ status: 'pending_approval' });
            t.config.mcpApprovalWaitSeconds = 30;
          }
        } finally {
          t.config.mcpApprovalWaitSeconds = 1;
        }
      });

      it('a decision asked for by several identical requests at once after it is handed over to one; the others are a new call', async () => {
        const client = await connect(org.keys.agent);
        for (let round = 0; round < 3; round++) {
          const tag = randomUUID();
          const args = { tag, text: 'Close the ticket.' };
          const pending = metaOf(await client.callTool({ name: 'fx-mcp-write', arguments: args }));
          await t.http
            .post(`/api/v1/approvals/${pending.approvalId}/approve`)
            .set(...bearer(org.keys.approver))
            .send({})
            .expect(200);
          const answers = (await Promise.all(Array.from({ length: 6 }, () => client.callTool({ name: 'fx-mcp-write', arguments: args })))).map(metaOf);
          expect(answers.filter((a) => a.status === 'succeeded')).toEqual([{ id: pending.id, status: 'succeeded', approvalId: pending.approvalId }]);
          // The others asked anew, together: one new call, one new approval.
          const others = answers.filter((a) => a.status !== 'succeeded');
          expect(others).toHaveLength(5);
          expect(new Set(others.map((a) => `${a.status} ${a.approvalId}`)).size).toBe(1);
          expect(others[0]).toMatchObject({ status: 'pending_approval' });
          expect(await approvalsTagged(tag)).toHaveLength(2);
          expect(mcpRunsTagged(tag)).toHaveLength(1);
        }
      });

      it('a rejection made meanwhile is handed over to the same call asked again; other arguments ask anew', async () => {
        const client = await connect(org.keys.agent);
        const tag = randomUUID();
        const first = metaOf(await client.callTool({ name: 'purgeNotes', arguments: { tag } }));
        const other = metaOf(await client.callTool({ name: 'fx-mcp-write', arguments: { tag, text: 'Something else.' } }));
        expect(other.approvalId).not.toBe(first.approvalId);
        await t.http
          .post(`/api/v1/approvals/${first.approvalId}/reject`)
          .set(...bearer(org.keys.approver))
          .send({ reason: 'Keep them.' })
          .expect(200);
        const decided = await client.callTool({ name: 'purgeNotes', arguments: { tag } });
        expect(decided.isError).toBe(true);
        expect(textOf(decided)).toContain('Their reason: Keep them.');
        expect(metaOf(decided)).toMatchObject({ id: first.id, status: 'rejected' });
        expect(mcpRunsTagged(tag)).toEqual([]);
      });

      it('another key of the organization asking the same thing gets its own approval', async () => {
        const second = await t.http
          .post(`/api/v1/orgs/${org.id}/api-keys`)
          .set(...bearer(org.keys.admin))
          .send({ name: 'second agent', roles: ['agent'] })
          .expect(201);
        const tag = randomUUID();
        const args = { tag, text: 'Same words.' };
        const mine = metaOf(await (await connect(org.keys.agent)).callTool({ name: 'fx-mcp-write', arguments: args }));
        const theirs = metaOf(await (await connect(second.body.token)).callTool({ name: 'fx-mcp-write', arguments: args }));
        expect(theirs.approvalId).not.toBe(mine.approvalId);
      });
    });
  });

  describe('stateless across API nodes', () => {
    // A second node on the same database: an app of its own (its own executor, its own in-process
    // wake-ups), so a decision made there reaches a call waiting here only through the database.
    // The embedded database allows one client, so there "node B" is this same app, and the test
    // shows only that the flow holds; the real server (DATABASE_URL) shows it across nodes.
    let nodeB: NestFastifyApplication | undefined;
    let baseB: string;
    beforeAll(async () => {
      if (!t.db.real) {
        baseB = base;
        return;
      }
      nodeB = await createApp({ config: t.config, database: { url: t.db.url, poolSize: t.db.poolSize }, imports: [McpFixturesModule], logger: false });
      await nodeB.listen(0, '127.0.0.1');
      baseB = await nodeB.getUrl();
    });
    afterAll(() => nodeB?.close());

    it('a call waiting on one node gets the decision made on another; the same call asked on the other node resumes it', async () => {
      const client = await connect(org.keys.agent);
      const tag = randomUUID();
      const args = { tag, text: 'Across nodes.' };
      const call = waitingCall(client, 'fx-mcp-write', args);
      await call.waiting;
      const [approval] = await approvalsTagged(tag);
      await request(baseB)
        .post(`/api/v1/approvals/${approval.id}/approve`)
        .set(...bearer(org.keys.approver))
        .send({})
        .expect(200);
      const result = await call.result;
      expect(result.structuredContent).toEqual({ written: tag, text: 'Across nodes.' });

      t.config.mcpApprovalWaitSeconds = 0;
      try {
        const other = randomUUID();
        const onA = metaOf(await client.callTool({ name: 'fx-mcp-write', arguments: { tag: other, text: 'x' } }));
        const clientB = new Client({ name: 'mcp-e2e-b', version: '1.0.0' });
        await clientB.connect(
          new StreamableHTTPClientTransport(new URL(`${baseB}/api/v1/agents/${agentId}/mcp`), {
            requestInit: { headers: { Authorization: `Bearer ${org.keys.agent}` } },
          }),
        );
        clients.push(clientB);
        const onB = metaOf(await clientB.callTool({ name: 'fx-mcp-write', arguments: { tag: other, text: 'x' } }));
        expect(onB).toEqual(onA);
        expect(await approvalsTagged(other)).toHaveLength(1);
      } finally {
        t.config.mcpApprovalWaitSeconds = WAIT_SECONDS;
      }
    });
  });

  describe('every guard of the REST path', () => {
    it('per-run limits apply to calls that name their run in _meta', async () => {
      const limited = await publishedAgent(org, 'Limited', { instructions: '', capabilities: [{ id: 'fx-mcp-notes' }, { id: 'fx-mcp-budget' }] });
      const client = await connect(org.keys.agent, limited);
      const runId = `run-${randomUUID()}`;
      const call = () => client.callTool({ name: 'fx-mcp-greet', arguments: { tag: runId }, _meta: { [RUN_ID_META]: runId } });
      expect((await call()).isError).toBeFalsy();
      const second = await call();
      expect(
        (
          await t.http
            .get(`/api/v1/tool-calls/${metaOf(second).id}`)
            .set(...bearer(org.keys.agent))
            .expect(200)
        ).body.runId,
      ).toBe(runId);
      const third = await call();
      expect(third.isError).toBe(true);
      expect(textOf(third)).toContain('(budget_exceeded)');
      expect(mcpRunsTagged(runId)).toHaveLength(2);
      const bad = await client.callTool({ name: 'fx-mcp-greet', arguments: { tag: 'x' }, _meta: { [RUN_ID_META]: 7 } }).catch((e: { code: number }) => e);
      expect(bad).toMatchObject({ code: ErrorCode.InvalidParams });
    });

    it('a scope the organization lost: its tools leave tools/list, and a call is refused (scope_not_granted)', async () => {
      const scoped = await createOrg(t, [FX_MCP_CRM_SCOPE]);
      const agent = await publishedAgent(scoped, 'Scoped', { instructions: '', capabilities: [{ id: 'fx-mcp-notes' }, { id: 'fx-mcp-crm' }] });
      const client = await connect(scoped.keys.agent, agent);
      expect((await client.listTools()).tools.map((x) => x.name)).toContain('fx-mcp-crm-lookup');
      await t.http
        .put(`/api/v1/orgs/${scoped.id}/scopes`)
        .set(...bearer(t.adminToken))
        .send({ scopes: [] })
        .expect(200);
      const names = (await client.listTools()).tools.map((x) => x.name);
      expect(names).not.toContain('fx-mcp-crm-lookup');
      expect(names).toContain('fx-mcp-search');
      const tag = randomUUID();
      const refused = await client.callTool({ name: 'fx-mcp-crm-lookup', arguments: { tag } });
      expect(refused.isError).toBe(true);
      expect(textOf(refused)).toContain('(scope_not_granted)');
      expect(mcpRunsTagged(tag)).toEqual([]);
    });

    it('a tool whose definition changed since publish leaves tools/list, and a call is refused (tool_definition_changed)', async () => {
      const agent = await publishedAgent(org, 'Drifting', { instructions: '', capabilities: [{ id: 'fx-mcp-drift' }] });
      const client = await connect(org.keys.agent, agent);
      expect((await client.listTools()).tools.map((x) => x.name)).toEqual(['fx-mcp-drifting']);
      const original = FX_MCP_DRIFTING.description;
      FX_MCP_DRIFTING.description = 'Release two.';
      try {
        expect((await client.listTools()).tools).toEqual([]);
        const refused = await client.callTool({ name: 'fx-mcp-drifting', arguments: { tag: 'x' } });
        expect(refused.isError).toBe(true);
        expect(textOf(refused)).toContain('(tool_definition_changed)');
      } finally {
        FX_MCP_DRIFTING.description = original;
      }
    });
  });

  describe('before MCP starts: problem documents', () => {
    it('401 without a valid token', async () => {
      const res = await rawPost(undefined).expect(401);
      expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(res.body.code).toBe('unauthorized');
      expect((await rawPost('cpk_nope').expect(401)).body.code).toBe('unauthorized');
      expect(await refusedConnect('cpk_nope')).toBe(401);
    });

    it('403 for a key without the agent role (viewer, builder, approver) and for the platform admin', async () => {
      for (const token of [org.keys.viewer, org.keys.builder, org.keys.approver, t.adminToken]) {
        const res = await rawPost(token).expect(403);
        expect(res.body).toMatchObject({ status: 403, code: 'forbidden' });
      }
      expect(await refusedConnect(org.keys.viewer)).toBe(403);
    });

    it("404 for another organization's agent, and nothing is recorded", async () => {
      const other = await createOrg(t, [FX_MCP_CRM_SCOPE]);
      const res = await rawPost(other.keys.agent).expect(404);
      expect(res.body).toMatchObject({ status: 404, code: 'not_found' });
      expect(await refusedConnect(other.keys.agent)).toBe(404);
      const body = { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'fx-mcp-write', arguments: { tag: 'x', text: 'y' } } };
      expect((await rawPost(other.keys.agent, agentId, '', body).expect(404)).body.code).toBe('not_found');
      const theirs = await t.http
        .get('/api/v1/audit-events?limit=200')
        .set(...bearer(other.keys.admin))
        .expect(200);
      expect(theirs.body.items.filter((e: { type: string }) => e.type.startsWith('tool_call.'))).toEqual([]);
      // The owner's key reaches the same agent.
      await rawPost(org.keys.agent).expect(200);
    });

    it('404 for an unknown agent or version, 409 before the first publish, 400 for a malformed version', async () => {
      expect((await rawPost(org.keys.agent, randomUUID()).expect(404)).body.code).toBe('not_found');
      expect((await rawPost(org.keys.agent, 'not-a-uuid').expect(404)).body.code).toBe('not_found');
      expect((await rawPost(org.keys.agent, agentId, '?version=99').expect(404)).body.code).toBe('not_found');
      const draft = await t.http
        .post('/api/v1/agents')
        .set(...bearer(org.keys.builder))
        .send({ slug: `mcp-draft-${++slugs}`, name: 'Draft only' })
        .expect(201);
      expect((await rawPost(org.keys.agent, draft.body.id).expect(409)).body.code).toBe('not_published');
      expect(await refusedConnect(org.keys.agent, draft.body.id)).toBe(409);
      for (const version of ['abc', '0', '1.5', '-1', '0x1', '1e0', '+1', '%201']) {
        const res = await rawPost(org.keys.agent, agentId, `?version=${version}`).expect(400);
        expect(res.body.code).toBe('invalid_request');
        expect(res.body.errors.length).toBeGreaterThan(0);
        expect(res.body.errors.map((e: { path: string }) => e.path)).toEqual(res.body.errors.map(() => 'version'));
      }
    });

    it('GET and DELETE: 405 with Allow: POST (a stateless endpoint offers no stream and keeps no session), after the same checks', async () => {
      for (const method of ['get', 'delete'] as const) {
        const res = await t.http[method](`/api/v1/agents/${agentId}/mcp`)
          .set(...bearer(org.keys.agent))
          .set('Accept', 'text/event-stream')
          .expect(405);
        expect(res.headers.allow).toBe('POST');
        expect(res.body).toMatchObject({ status: 405, code: 'method_not_allowed' });
        expect(
          (
            await t.http[method](`/api/v1/agents/${agentId}/mcp`)
              .set(...bearer(org.keys.viewer))
              .expect(403)
          ).body.code,
        ).toBe('forbidden');
        expect(
          (
            await t.http[method](`/api/v1/agents/${randomUUID()}/mcp`)
              .set(...bearer(org.keys.agent))
              .expect(404)
          ).body.code,
        ).toBe('not_found');
        await t.http[method](`/api/v1/agents/${agentId}/mcp`).expect(401);
      }
    });

    it('hostile messages to a published agent: never a 5xx, never a tool run outside the executor', async () => {
      const method = fc.constantFrom('initialize', 'tools/list', 'tools/call', 'ping', 'notifications/initialized', 'resources/list', '__proto__', '');
      const params = fc.oneof(
        fc.anything({ maxDepth: 3 }),
        fc.record(
          { name: fc.constantFrom('search_notes', 'fx-mcp-write', 'nope', ''), arguments: fc.anything({ maxDepth: 3 }), _meta: fc.anything({ maxDepth: 2 }) },
          { requiredKeys: [] },
        ),
      );
      const message = fc.record(
        { jsonrpc: fc.constantFrom('2.0', '1.0'), id: fc.oneof(fc.integer(), fc.string(), fc.constant(null)), method, params },
        { requiredKeys: [] },
      );
      const body = fc.oneof(message, fc.array(message, { maxLength: 3 }), fc.anything({ maxDepth: 3 }));
      const before = mcpFixtureRuns.filter((r) => r.tool === 'fx-mcp-write').length;
      await fc.assert(
        fc.asyncProperty(body, async (b) => {
          const res = await rawPost(org.keys.agent, agentId, '', b);
          if (res.status >= 500) throw new Error(`answered ${res.status} to ${JSON.stringify(b).slice(0, 300)}: ${res.text.slice(0, 300)}`);
        }),
        { numRuns: 60 },
      );
      // A mutating tool runs only once a person approves it, whatever arrives.
      expect(mcpFixtureRuns.filter((r) => r.tool === 'fx-mcp-write').length).toBe(before);
    });

    it('what is not MCP is answered by the transport as JSON-RPC', async () => {
      // JSON that is not a JSON-RPC message is an invalid request (-32600; the 1.x SDK said parse error, -32700).
      const res = await rawPost(org.keys.agent, agentId, '', { hello: 'world' }).expect(400);
      expect(res.body).toMatchObject({ jsonrpc: '2.0', error: { code: ErrorCode.InvalidRequest } });
      const notAccepting = await t.http
        .post(`/api/v1/agents/${agentId}/mcp`)
        .set(...bearer(org.keys.agent))
        .set('Accept', 'application/json')
        .send(INITIALIZE)
        .expect(406);
      expect(notAccepting.body).toMatchObject({ jsonrpc: '2.0', error: { code: -32000 } });
    });
  });
});

describe('MCP endpoint while the server stops (e2e)', () => {
  let t: TestApp;
  let closed: Promise<void> | undefined;

  beforeAll(async () => {
    t = await createTestApp({ imports: [McpFixturesModule], config: { mcpApprovalWaitSeconds: 3600 } });
    await t.app.listen(0, '127.0.0.1');
  });
  afterAll(() => closed ?? t.close());

  it('a call waiting for a decision answers "still pending" instead of holding up the stop', async () => {
    const org = await createOrg(t);
    const a = await t.http
      .post('/api/v1/agents')
      .set(...bearer(org.keys.builder))
      .send({ slug: 'stopping', name: 'Stopping' })
      .expect(201);
    await t.http
      .put(`/api/v1/agents/${a.body.id}/draft`)
      .set(...bearer(org.keys.builder))
      .send({ instructions: '', capabilities: [{ id: 'fx-mcp-notes' }] })
      .expect(200);
    await t.http
      .post(`/api/v1/agents/${a.body.id}/publish`)
      .set(...bearer(org.keys.builder))
      .expect(201);
    const client = new Client({ name: 'mcp-e2e', version: '1.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${await t.app.getUrl()}/api/v1/agents/${a.body.id}/mcp`), {
        requestInit: { headers: { Authorization: `Bearer ${org.keys.agent}` } },
      }),
    );
    let started!: () => void;
    const waiting = new Promise<void>((resolve) => (started = resolve));
    const result = client.callTool({ name: 'fx-mcp-write', arguments: { tag: 'stop', text: 'x' } }, undefined, {
      timeout: 120_000,
      onprogress: () => started(),
    });
    await waiting;
    closed = t.close();
    const answer = await result;
    expect(answer.isError).toBeFalsy();
    expect((answer._meta![CALL_META] as { status: string }).status).toBe('pending_approval');
    await closed;
    await client.close();
  });
});
