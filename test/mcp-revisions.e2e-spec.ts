import { Client, StreamableHTTPClientTransport, type CallToolResult } from '@modelcontextprotocol/client';
import { randomUUID } from 'node:crypto';
import { CALL_META } from '../src/mcp/mcp-shapes';
import { FX_MCP_CRM_SCOPE, McpFixturesModule, mcpRunsTagged, NOTES_GUIDANCE } from './fixtures/mcp-fixtures.module';
import { bearer, createOrg, createTestApp, TestApp, TestOrg } from './support/test-app';

/**
 * Issue 20: one agent endpoint serves both protocol revisions. The 2.x client of the SDK, once
 * pinned to 2026-07-28 (stateless requests, `server/discover`, the per-request `_meta` envelope)
 * and once speaking 2025-11-25 (the `initialize` handshake), does the same things against the
 * same URL and meets the same governance: the executor's records, refusals and approvals.
 */
const REVISIONS = [
  { revision: '2026-07-28', era: 'modern', negotiation: { mode: { pin: '2026-07-28' } } },
  { revision: '2025-11-25', era: 'legacy', negotiation: undefined },
] as const;

describe('MCP endpoint, both protocol revisions (e2e)', () => {
  let t: TestApp;
  let base: string;
  let org: TestOrg;
  let agentId: string;
  const clients: Client[] = [];
  const INSTRUCTIONS = 'You keep the notes.';

  beforeAll(async () => {
    t = await createTestApp({ imports: [McpFixturesModule], config: { mcpApprovalWaitSeconds: 0 } });
    await t.app.listen(0, '127.0.0.1');
    base = await t.app.getUrl();
    org = await createOrg(t, [FX_MCP_CRM_SCOPE]);
    const a = await t.http
      .post('/api/v1/agents')
      .set(...bearer(org.keys.builder))
      .send({ slug: 'revisions', name: 'Revisions' })
      .expect(201);
    agentId = a.body.id;
    await t.http
      .put(`/api/v1/agents/${agentId}/draft`)
      .set(...bearer(org.keys.builder))
      .send({ instructions: INSTRUCTIONS, capabilities: [{ id: 'fx-mcp-notes' }], toolOverrides: { 'fx-mcp-search': { name: 'search_notes' } } })
      .expect(200);
    await t.http
      .post(`/api/v1/agents/${agentId}/publish`)
      .set(...bearer(org.keys.builder))
      .expect(201);
  });
  afterAll(async () => {
    await Promise.all(clients.map((c) => c.close().catch(() => undefined)));
    await t.close();
  });

  async function connect(negotiation: (typeof REVISIONS)[number]['negotiation']): Promise<Client> {
    const client = new Client({ name: 'revisions-e2e', version: '1.0.0' }, negotiation ? { versionNegotiation: negotiation } : {});
    const url = new URL(`${base}/api/v1/agents/${agentId}/mcp`);
    await client.connect(new StreamableHTTPClientTransport(url, { requestInit: { headers: { Authorization: `Bearer ${org.keys.agent}` } } }));
    clients.push(client);
    return client;
  }

  const metaOf = (r: CallToolResult) => r._meta![CALL_META] as { id: string; status: string; approvalId?: string; code?: string };
  const textOf = (r: CallToolResult) => r.content.map((c) => (c.type === 'text' ? c.text : '')).join('\n');

  describe.each(REVISIONS)('a $revision client', ({ revision, era, negotiation }) => {
    it('negotiates its revision and learns who the server is and its instructions', async () => {
      const client = await connect(negotiation);
      expect(client.getNegotiatedProtocolVersion()).toBe(revision);
      expect(client.getProtocolEra()).toBe(era);
      expect(client.getServerVersion()).toMatchObject({ name: 'Revisions', version: '1' });
      expect(client.getInstructions()).toBe(`${INSTRUCTIONS}\n\n${NOTES_GUIDANCE}`);
      expect(client.getServerCapabilities()?.tools).toBeDefined();
    });

    it('lists the offered tools with their annotations and declared output shape', async () => {
      const client = await connect(negotiation);
      const { tools } = await client.listTools();
      expect(tools.map((tool) => tool.name).sort()).toEqual(
        ['fx-mcp-fail', 'fx-mcp-greet', 'fx-mcp-list', 'fx-mcp-purge', 'fx-mcp-write', 'search_notes'].sort(),
      );
      const search = tools.find((tool) => tool.name === 'search_notes')!;
      expect(search.annotations).toEqual({ title: 'Search notes', readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false });
      expect(search.outputSchema).toMatchObject({ type: 'object', required: ['query', 'limit', 'hits'] });
    });

    it('calls a tool through the executor: recorded with entry point mcp; the result conforms to the listed output shape', async () => {
      const client = await connect(negotiation);
      // Listed first, so that the client checks structuredContent against the outputSchema.
      await client.listTools();
      const query = randomUUID();
      const result = await client.callTool({ name: 'search_notes', arguments: { query } });
      expect(result.isError).toBeFalsy();
      expect(result.structuredContent).toEqual({ query, limit: 5, hits: [{ title: `About ${query}` }] });
      const call = await t.http
        .get(`/api/v1/tool-calls/${metaOf(result).id}`)
        .set(...bearer(org.keys.viewer))
        .expect(200);
      expect(call.body).toMatchObject({ status: 'succeeded', entryPoint: 'mcp', requestedBy: org.keyIds.agent, tool: 'search_notes' });
    });

    it('a governed refusal (invalid arguments) is isError and nothing runs', async () => {
      const client = await connect(negotiation);
      const result = await client.callTool({ name: 'search_notes', arguments: { query: 42 } });
      expect(result.isError).toBe(true);
      expect(textOf(result)).toMatch(/^The arguments are invalid, so nothing ran\./);
      expect(metaOf(result)).toMatchObject({ status: 'refused', code: 'invalid_arguments' });
    });

    it('a call that needs approval is pending, names its approval, and runs nothing until a person decides', async () => {
      const client = await connect(negotiation);
      const tag = randomUUID();
      const result = await client.callTool({ name: 'fx-mcp-write', arguments: { tag, text: 'Refund.' } });
      expect(result.isError).toBeFalsy();
      const meta = metaOf(result);
      expect(meta.status).toBe('pending_approval');
      expect(textOf(result)).toContain(`approval ${meta.approvalId}`);
      expect(mcpRunsTagged(tag)).toEqual([]);
      const approval = await t.http
        .get(`/api/v1/approvals/${meta.approvalId}`)
        .set(...bearer(org.keys.approver))
        .expect(200);
      expect(approval.body).toMatchObject({ status: 'pending', toolCallId: meta.id });
    });
  });
});
