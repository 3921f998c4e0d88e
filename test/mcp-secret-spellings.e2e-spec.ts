import { FixtureMcpServer, startFixtureMcpServer } from './support/mcp-fixture-server';
import { bearer, createOrg, createTestApp, TestApp, TestOrg } from './support/test-app';

const TOKEN = 'e2e-Secret-Token-4242abcd';
const CREDENTIAL = `Bearer ${TOKEN}`;
const b64 = (text: string) => Buffer.from(text).toString('base64');
const b64url = (text: string) => Buffer.from(text).toString('base64url');

/**
 * Whether the text holds the token in any case, or base64 (either alphabet) that decodes to it
 * wherever the encoding began: checked by decoding, not by the spellings the product looks for.
 */
function leaks(text: string): boolean {
  if (text.toLowerCase().includes(TOKEN.toLowerCase())) return true;
  for (const [run] of text.matchAll(/[A-Za-z0-9+/_-]{8,}/g)) {
    for (let skip = 0; skip < 4; skip++) {
      if (Buffer.from(run.slice(skip).replace(/-/g, '+').replace(/_/g, '/'), 'base64').toString('latin1').includes(TOKEN)) return true;
    }
  }
  return false;
}

const tool = (name: string, description = 'Echoes.') => ({ name, description, inputSchema: { type: 'object' } });

/**
 * API.md "Secrets and outbound connections": an MCP server that echoes its connection's
 * credential has it shown as `[redacted]`, also in another case, base64-encoded (of the header or
 * of its token, inside a longer encoded text) and cut in two across a result's text items.
 * Before, only the exact spelling was redacted: every other one was stored and shown to viewers,
 * to the agent, and to its model.
 */
describe('MCP: a credential echoed in other spellings (e2e)', () => {
  let t: TestApp;
  let org: TestOrg;
  let server: FixtureMcpServer;
  let connectionId: string;
  let agentId: string;

  beforeAll(async () => {
    t = await createTestApp({ config: { toolTimeoutMs: 5000 } });
    org = await createOrg(t, ['mcp:remote']);
    server = await startFixtureMcpServer();
    server.state.rawToolsList = (authorization) => ({
      result: {
        tools: [
          tool('forms', `Called with ${authorization?.toUpperCase()}; token ${b64(TOKEN)}, header ${b64url(authorization ?? '')}`),
          tool('split'),
          tool('refuse'),
        ],
      },
    });
    server.state.rawToolsCall = (name, authorization = '') => {
      const token = authorization.split(' ')[1] ?? '';
      if (name === 'forms') {
        const inJson = ['', 'x', 'xy'].map((pad) => b64(JSON.stringify({ pad, authorization })));
        const text = [
          `upper=${authorization.toUpperCase()}`,
          `lower=${token.toLowerCase()}`,
          `b64=${b64(authorization)} ${b64(token)}`,
          `b64url=${b64url(token)}`,
          `unpadded=${b64(token).replace(/=+$/, '')}`,
          `embedded=${inJson.join(' ')}`,
        ].join('\n');
        return { result: { content: [{ type: 'text', text }], structuredContent: { [b64(token)]: token.toUpperCase() } } };
      }
      if (name === 'split') {
        const cut = authorization.length - 12;
        return {
          result: {
            content: [
              { type: 'text', text: `p1=${authorization.slice(0, cut)}` },
              { type: 'text', text: `${authorization.slice(cut)} done` },
            ],
          },
        };
      }
      if (name === 'refuse') return { error: { code: -32000, message: `bad token ${token.toLowerCase()} / ${b64(token)}` } };
      return undefined;
    };
    const created = await t.http
      .post('/api/v1/mcp-connections')
      .set(...as('admin'))
      .send({ server: 'remote', name: 'spellings', url: server.url, credentials: { authorization: CREDENTIAL } })
      .expect(201);
    connectionId = created.body.id;
    for (const name of ['forms', 'split', 'refuse']) {
      await t.http
        .put(`/api/v1/mcp-connections/${connectionId}/tools/${name}/risk`)
        .set(...as('admin'))
        .send({ risk: 'read_only' })
        .expect(200);
    }
    const agent = await t.http
      .post('/api/v1/agents')
      .set(...as('builder'))
      .send({ slug: 'spellings', name: 'Spellings' })
      .expect(201);
    agentId = agent.body.id;
    await t.http
      .put(`/api/v1/agents/${agentId}/draft`)
      .set(...as('builder'))
      .send({ instructions: 'x', capabilities: [], mcpServers: [{ connection: connectionId, tools: ['forms', 'split', 'refuse'] }] })
      .expect(200);
    await t.http
      .post(`/api/v1/agents/${agentId}/publish`)
      .set(...as('builder'))
      .expect(201);
  }, 240_000);
  afterAll(async () => {
    await server.close();
    await t.close();
  });

  const as = (role: keyof TestOrg['keys']) => bearer(org.keys[role]);
  const call = (name: string) =>
    t.http
      .post(`/api/v1/agents/${agentId}/tool-calls`)
      .set(...as('agent'))
      .send({ tool: name, arguments: {} })
      .expect(200);

  it('the leak detector of this test sees every spelling the server sends', () => {
    expect(server.authorizations).toContain(CREDENTIAL);
    const forms = server.state.rawToolsCall!('forms', CREDENTIAL) as { result: { content: { text: string }[] } };
    for (const line of forms.result.content[0].text.split('\n')) expect([line, leaks(line)]).toEqual([line, true]);
    expect(leaks('Bearer e2e-Sec' + 'ret-Token-4242abcd'.slice(0, 5))).toBe(false);
  });

  it('a result echoing the credential upper- or lower-cased, or base64 of it or of its token: every spelling redacted', async () => {
    const res = await call('forms');
    expect(res.body.status).toBe('succeeded');
    const text: string = res.body.result.content[0].text;
    expect(text.split('\n').slice(0, 5)).toEqual([
      'upper=[redacted]',
      'lower=[redacted]',
      'b64=[redacted] [redacted]',
      'b64url=[redacted]',
      'unpadded=[redacted]',
    ]);
    // Inside the base64 of a longer text, at each of the three alignments, only the secret's part is replaced.
    expect(text.split('\n')[5].match(/\[redacted\]/g)).toHaveLength(3);
    expect(res.body.result.structuredContent).toEqual({ '[redacted]': '[redacted]' });
    expect(leaks(res.text)).toBe(false);
  });

  it('a credential cut in two across the text items of a result: each part redacted', async () => {
    const res = await call('split');
    expect(res.body.result.content).toEqual([
      { type: 'text', text: 'p1=[redacted]' },
      { type: 'text', text: '[redacted] done' },
    ]);
  });

  it("a server's error echoing the token lower-cased and in base64 is redacted in the call's error", async () => {
    const res = await call('refuse');
    expect(res.body).toMatchObject({ status: 'failed', error: { code: 'tool_error' } });
    expect(res.body.error.message).toContain('bad token [redacted] / [redacted]');
  });

  it('no answer, to a viewer, the agent or the admin, holds the credential in any of these spellings', async () => {
    const reads = [
      ['viewer', `/api/v1/mcp-connections/${connectionId}`],
      ['viewer', '/api/v1/tool-calls?limit=200'],
      ['agent', `/api/v1/agents/${agentId}/versions/latest/tools`],
      ['admin', '/api/v1/audit-events?limit=200'],
    ] as const;
    const texts = await Promise.all(
      reads.map(
        async ([role, path]) =>
          (
            await t.http
              .get(path)
              .set(...as(role))
              .expect(200)
          ).text,
      ),
    );
    expect(texts.map(leaks)).toEqual(reads.map(() => false));
    expect(texts[0]).toContain('Called with [redacted]; token [redacted], header [redacted]');
    // The calls above are all there, read back from the database.
    expect(texts[1].match(/\[redacted\]/g)!.length).toBeGreaterThanOrEqual(12);
  });
});
