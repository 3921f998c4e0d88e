import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ErrorCode, McpError, Progress } from '@modelcontextprotocol/sdk/types.js';
import { randomUUID } from 'node:crypto';
import { CredentialWatch } from '../src/auth/credential-watch.service';
import { McpFixturesModule, mcpRunsTagged } from './fixtures/mcp-fixtures.module';
import { TestIdentityProvider } from './support/oidc-provider';
import { bearer, createOrg, createTestApp, TestApp, TestOrg } from './support/test-app';

/**
 * docs/mcp.md "Approvals, from the client's side": a `tools/call` waiting for a person is held
 * open. Like the event and run streams, it ends when its credential would be refused (an API key
 * revoked meanwhile, a token past its expiry): with a JSON-RPC error, never the tool's result. The
 * call itself stays for an approver to decide (its outcome is at GET /tool-calls/{id}).
 */
describe('an MCP call held for approval, when its credential ends (e2e)', () => {
  let idp: TestIdentityProvider;
  let t: TestApp;
  let base: string;
  let org: TestOrg;
  let agentId: string;
  const clients: Client[] = [];

  beforeAll(async () => {
    idp = await TestIdentityProvider.start();
    t = await createTestApp({
      imports: [McpFixturesModule],
      config: {
        mcpApprovalWaitSeconds: 20,
        oidc: idp.config({ clockSkewSeconds: 0, keyRefreshCooldownMs: 30_000 }),
      },
    });
    await t.app.listen(0, '127.0.0.1');
    base = await t.app.getUrl();
    org = await createOrg(t);
    const agent = await t.http
      .post('/api/v1/agents')
      .set(...bearer(org.keys.builder))
      .send({ slug: 'held', name: 'Held' })
      .expect(201);
    agentId = agent.body.id;
    await t.http
      .put(`/api/v1/agents/${agentId}/draft`)
      .set(...bearer(org.keys.builder))
      .send({ instructions: '', capabilities: [{ id: 'fx-mcp-notes' }] })
      .expect(200);
    await t.http
      .post(`/api/v1/agents/${agentId}/publish`)
      .set(...bearer(org.keys.builder))
      .expect(201);
  });
  afterAll(async () => {
    await Promise.all(clients.map((c) => c.close()));
    await t.close();
    await idp.close();
  });

  async function connect(token: string): Promise<Client> {
    const client = new Client({ name: 'held-e2e', version: '1.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${base}/api/v1/agents/${agentId}/mcp`), { requestInit: { headers: { Authorization: `Bearer ${token}` } } }),
    );
    clients.push(client);
    return client;
  }

  async function agentKey(): Promise<{ id: string; token: string }> {
    const res = await t.http
      .post(`/api/v1/orgs/${org.id}/api-keys`)
      .set(...bearer(org.keys.admin))
      .send({ name: `held ${randomUUID()}`, roles: ['agent'] })
      .expect(201);
    return res.body;
  }

  /** A call of the mutating tool, resolved as the server says it waits (its first progress); `answer` settles with what the held request answered. */
  async function heldCall(client: Client, tag: string) {
    const progress: Progress[] = [];
    let started!: () => void;
    const waiting = new Promise<void>((resolve) => (started = resolve));
    const answer = client
      .callTool({ name: 'fx-mcp-write', arguments: { tag, text: 'Refund 500.' } }, undefined, {
        timeout: 300_000,
        onprogress: (p) => {
          progress.push(p);
          started();
        },
      })
      .then(
        (result) => ({ result, error: undefined }),
        (error: unknown) => ({ result: undefined, error }),
      );
    await waiting;
    const approvals = await t.http
      .get('/api/v1/approvals?status=pending&limit=200')
      .set(...bearer(org.keys.approver))
      .expect(200);
    const approval = approvals.body.items.find((a: { arguments: { tag?: string } }) => a.arguments.tag === tag);
    return { answer, approval: approval as { id: string; toolCallId: string }, progress };
  }

  function expectCredentialRefused(error: unknown): void {
    expect(error).toBeInstanceOf(McpError);
    expect((error as McpError).code).toBe(ErrorCode.InvalidRequest);
    expect((error as McpError).message).toContain('(unauthorized)');
  }

  it("a key revoked while the call waits never gets the result of the call approved after (before the revocation's next check)", async () => {
    const key = await agentKey();
    const tag = randomUUID();
    const { answer, approval } = await heldCall(await connect(key.token), tag);
    await t.http
      .delete(`/api/v1/orgs/${org.id}/api-keys/${key.id}`)
      .set(...bearer(org.keys.admin))
      .expect(204);
    // The call stays approvable (a revoked key's own calls are left to the approvers), and runs.
    const approved = await t.http
      .post(`/api/v1/approvals/${approval.id}/approve`)
      .set(...bearer(org.keys.approver))
      .send({})
      .expect(200);
    expect(approved.body.toolCall.status).toBe('succeeded');
    expect(mcpRunsTagged(tag)).toHaveLength(1);

    const { result, error } = await answer;
    expect(result).toBeUndefined();
    expectCredentialRefused(error);
  });

  it('a key revoked while the call waits: the held request ends at the next check, and the call still waits for a person', async () => {
    const key = await agentKey();
    const tag = randomUUID();
    const { answer, approval } = await heldCall(await connect(key.token), tag);
    await t.http
      .delete(`/api/v1/orgs/${org.id}/api-keys/${key.id}`)
      .set(...bearer(org.keys.admin))
      .expect(204);
    // The next heartbeat's check, at once.
    await t.app.get(CredentialWatch).check();
    const { result, error } = await answer;
    expect(result).toBeUndefined();
    expectCredentialRefused(error);
    const stored = await t.http
      .get(`/api/v1/tool-calls/${approval.toolCallId}`)
      .set(...bearer(org.keys.viewer))
      .expect(200);
    expect(stored.body.status).toBe('pending_approval');
    expect(mcpRunsTagged(tag)).toEqual([]);
  });

  it("a token that expires while the call waits ends the held request; the person's next identical call, signed in again, gets the decision", async () => {
    const sub = `held-${randomUUID()}`;
    const token = await idp.token({ claims: { org_id: org.id, roles: ['agent'], sub, scope: 'openid mcp:tools' }, expiresIn: 2 });
    const tag = randomUUID();
    const { answer, approval } = await heldCall(await connect(token), tag);
    const { result, error } = await answer;
    expect(result).toBeUndefined();
    expectCredentialRefused(error);
    const { exp } = JSON.parse(Buffer.from(token.split('.')[1], 'base64url').toString()) as { exp: number };
    expect(Date.now()).toBeGreaterThanOrEqual(exp * 1000);

    await t.http
      .post(`/api/v1/approvals/${approval.id}/approve`)
      .set(...bearer(org.keys.approver))
      .send({})
      .expect(200);
    const fresh = await idp.token({ claims: { org_id: org.id, roles: ['agent'], sub, scope: 'openid mcp:tools' } });
    const again = await (await connect(fresh)).callTool({ name: 'fx-mcp-write', arguments: { tag, text: 'Refund 500.' } });
    expect(again.structuredContent).toEqual({ written: tag, text: 'Refund 500.' });
    expect(mcpRunsTagged(tag)).toHaveLength(1);
  });
});
