import { DataSource } from 'typeorm';
import { McpConnectionsService } from '../src/mcp-catalog/connections/mcp-connections.service';
import { WebhooksService } from '../src/events/webhooks.service';
import { SecretsService } from '../src/secrets/secrets.service';
import { FixtureMcpServer, startFixtureMcpServer } from './support/mcp-fixture-server';
import { bearer, createOrg, createTestApp, publishAgent, TestApp, TestOrg } from './support/test-app';
import { until } from './support/until';
import { WebhookReceiver } from './support/webhook-receiver';

const MCP_KEY = 'URLKEY-4567890123';
const HOOK_TOKEN = 'WHTOKEN-78901234';

/**
 * API.md "Secrets and outbound connections": a token in a saved URL's query (a hosted MCP server's
 * `?api_key=`, a receiver's `?token=`) is a secret like a credential field's. It was stored whole
 * and shown to every viewer (MCP connections), to admins (webhooks) and in the audit log.
 */
describe('tokens in saved URLs (e2e)', () => {
  let t: TestApp;
  let ds: DataSource;
  let org: TestOrg;
  let fixture: FixtureMcpServer;
  const receivers: WebhookReceiver[] = [];

  beforeAll(async () => {
    t = await createTestApp({
      config: {
        toolTimeoutMs: 5000,
        events: { heartbeatMs: 15_000, pollMs: 300, webhookTimeoutMs: 2_000, webhookRetryBaseMs: 200, webhookRetryWindowMs: 60_000 },
      },
    });
    ds = t.app.get(DataSource);
    org = await createOrg(t, ['mcp:remote']);
    fixture = await startFixtureMcpServer({ echoRequestUrl: true });
    // The embedded database starts slowly on a loaded machine.
  }, 180_000);
  afterAll(async () => {
    await Promise.all(receivers.map((r) => r.stop()));
    await fixture.close();
    await t.close();
  });

  const as = (role: keyof TestOrg['keys']) => bearer(org.keys[role]);
  const auditText = async (type: string) =>
    (
      await t.http
        .get(`/api/v1/audit-events?type=${type}`)
        .set(...as('admin'))
        .expect(200)
    ).text;
  const open = (sealed: string) => t.app.get(SecretsService).open(sealed);

  /** `whereami` of the connection, offered by a new agent, asked for and approved: the approval's answer. */
  const whereami = async (connection: string, slug: string) => {
    const agent = await publishAgent(t, org, slug, { instructions: '', capabilities: [], mcpServers: [{ connection, tools: ['whereami'] }] });
    const pending = await t.http
      .post(`/api/v1/agents/${agent}/tool-calls`)
      .set(...as('agent'))
      .send({ tool: 'whereami', arguments: {} })
      .expect(202);
    return t.http
      .post(`/api/v1/approvals/${pending.body.approvalId}/approve`)
      .set(...as('approver'))
      .send({})
      .expect(200);
  };

  describe('MCP connections', () => {
    let id: string;
    const full = () => `${fixture.url}?api_key=${MCP_KEY}&region=eu`;
    const shown = () => `${fixture.url}?api_key=[redacted]&region=[redacted]`;

    it('connect with the whole URL, keep it sealed, and show every query value redacted to every reader', async () => {
      const created = await t.http
        .post('/api/v1/mcp-connections')
        .set(...as('admin'))
        .send({ server: 'remote', name: 'hosted', url: full() })
        .expect(201);
      id = created.body.id;
      expect(created.body.url).toBe(shown());
      expect(fixture.requestUrls).toContain(`/mcp?api_key=${MCP_KEY}&region=eu`);
      for (const role of ['viewer', 'builder', 'approver', 'admin'] as const) {
        const list = await t.http
          .get('/api/v1/mcp-connections')
          .set(...as(role))
          .expect(200);
        const one = await t.http
          .get(`/api/v1/mcp-connections/${id}`)
          .set(...as(role))
          .expect(200);
        expect(list.text + one.text).not.toContain(MCP_KEY);
        expect(one.body.url).toBe(shown());
      }
      const audit = await auditText('mcp_connection.created');
      expect(audit).not.toContain(MCP_KEY);
      expect(audit).toContain('api_key=[redacted]');
      const [row] = await ds.query(`SELECT url, url_sealed FROM mcp_connection WHERE id = $1`, [id]);
      expect(row.url).toBe(shown());
      expect(row.url_sealed).not.toContain(MCP_KEY);
      expect(open(row.url_sealed)).toBe(full());
    });

    it('calls the whole URL, and a server that echoes it has the token redacted in the result', async () => {
      const approved = await whereami(id, 'hosted');
      expect(fixture.calls).toContain('whereami');
      expect(approved.body.toolCall.result).toEqual({
        content: [{ type: 'text', text: 'you called /mcp?api_key=[redacted]&region=eu' }],
        structuredContent: { url: '/mcp?api_key=[redacted]&region=eu' },
      });
      const read = await t.http
        .get(`/api/v1/tool-calls/${approved.body.toolCall.id}`)
        .set(...as('viewer'))
        .expect(200);
      expect(read.text).not.toContain(MCP_KEY);
    });

    it('a server echoing a token its URL carries in the path has it redacted in the result (attack round 11, F-F5)', async () => {
      const token = 'ZjQ5YmE3NmQtNzE0OS00YjQ2LWE0MmItOTk2NmQ0MmM0OGRm';
      const conn = await t.http
        .post('/api/v1/mcp-connections')
        .set(...as('admin'))
        .send({ server: 'remote', name: 'hosted-path', url: `${fixture.url}/s/${token}/mcp` })
        .expect(201);
      const approved = await whereami(conn.body.id, 'hosted-path');
      expect(fixture.requestUrls).toContain(`/mcp/s/${token}/mcp`);
      expect(approved.body.toolCall.result.structuredContent).toEqual({ url: '/mcp/s/[redacted]/mcp' });
      const read = await t.http
        .get(`/api/v1/tool-calls/${approved.body.toolCall.id}`)
        .set(...as('agent'))
        .expect(200);
      expect(read.text).not.toContain(token);
    });

    it('a token in the path is shown redacted to every reader and kept sealed, also after a move and when saved whole before (session 36, F-F5)', async () => {
      const token = 'c2Vzc2lvbi0zNi1wYXRoLXRva2VuLTAx';
      const moved = 'c2Vzc2lvbi0zNi1wYXRoLXRva2VuLTAy';
      const conn = await t.http
        .post('/api/v1/mcp-connections')
        .set(...as('admin'))
        .send({ server: 'remote', name: 'path-token', url: `${fixture.url}/s/${token}/mcp` })
        .expect(201);
      expect(conn.body.url).toBe(`${fixture.url}/s/[redacted]/mcp`);
      const list = await t.http
        .get('/api/v1/mcp-connections')
        .set(...as('viewer'))
        .expect(200);
      expect(list.text + (await auditText('mcp_connection.created'))).not.toContain(token);
      const sealedRow = async () => (await ds.query(`SELECT url, url_sealed FROM mcp_connection WHERE id = $1`, [conn.body.id]))[0];
      expect((await sealedRow()).url).toBe(`${fixture.url}/s/[redacted]/mcp`);
      expect(open((await sealedRow()).url_sealed)).toBe(`${fixture.url}/s/${token}/mcp`);

      const heard = fixture.requestUrls.length;
      const put = await t.http
        .put(`/api/v1/mcp-connections/${conn.body.id}/url`)
        .set(...as('admin'))
        .send({ url: `${fixture.url}/s/${moved}/mcp` })
        .expect(200);
      expect(put.body.url).toBe(`${fixture.url}/s/[redacted]/mcp`);
      expect(fixture.requestUrls.slice(heard)).toContain(`/mcp/s/${moved}/mcp`);
      const updated = await auditText('mcp_connection.url_updated');
      expect(updated).toContain('/s/[redacted]/mcp');
      expect(updated).not.toContain(token);
      expect(updated).not.toContain(moved);

      // Saved whole before, with an event naming it: shown redacted at once, sealed at the next start, still reached.
      await ds.query(`UPDATE mcp_connection SET url = $2, url_sealed = NULL WHERE id = $1`, [conn.body.id, `${fixture.url}/s/${token}/mcp`]);
      await ds.query(
        `INSERT INTO audit_event (id, org_id, type, actor_type, actor_id, target_type, target_id, data)
         VALUES (gen_random_uuid(), $1, 'mcp_connection.url_updated', 'system', 'test', 'mcp_connection', $2, $3::jsonb)`,
        [org.id, conn.body.id, JSON.stringify({ name: 'path-token', url: `${fixture.url}/s/${token}/mcp`, previousUrl: `${fixture.url}/s/${moved}/mcp` })],
      );
      const legacy = await t.http
        .get(`/api/v1/mcp-connections/${conn.body.id}`)
        .set(...as('viewer'))
        .expect(200);
      expect(legacy.body.url).toBe(`${fixture.url}/s/[redacted]/mcp`);
      const legacyAudit = await auditText('mcp_connection.url_updated');
      expect(legacyAudit).not.toContain(token);
      expect(legacyAudit).not.toContain(moved);
      await t.app.get(McpConnectionsService).onApplicationBootstrap();
      expect((await sealedRow()).url).toBe(`${fixture.url}/s/[redacted]/mcp`);
      expect(open((await sealedRow()).url_sealed)).toBe(`${fixture.url}/s/${token}/mcp`);
      const before = fixture.requestUrls.length;
      await t.http
        .post(`/api/v1/mcp-connections/${conn.body.id}/sync`)
        .set(...as('admin'))
        .expect(200);
      expect(fixture.requestUrls.slice(before)).toContain(`/mcp/s/${token}/mcp`);
    });

    it('a connection saved whole before is shown redacted at once, sealed at the next start, and still reached', async () => {
      await ds.query(`UPDATE mcp_connection SET url = $2, url_sealed = NULL WHERE id = $1`, [id, full()]);
      const before = await t.http
        .get(`/api/v1/mcp-connections/${id}`)
        .set(...as('viewer'))
        .expect(200);
      expect(before.body.url).toBe(shown());
      await t.app.get(McpConnectionsService).onApplicationBootstrap();
      const [row] = await ds.query(`SELECT url, url_sealed FROM mcp_connection WHERE id = $1`, [id]);
      expect(row.url).toBe(shown());
      expect(open(row.url_sealed)).toBe(full());
      const heard = fixture.requestUrls.length;
      await t.http
        .post(`/api/v1/mcp-connections/${id}/sync`)
        .set(...as('admin'))
        .expect(200);
      expect(fixture.requestUrls.slice(heard)).toContain(`/mcp?api_key=${MCP_KEY}&region=eu`);
    });
  });

  describe('webhooks', () => {
    it('deliver to the whole URL; answers, the audit log and the deliveries show its query values redacted', async () => {
      const receiver = await WebhookReceiver.start();
      receivers.push(receiver);
      const created = await t.http
        .post('/api/v1/webhooks')
        .set(...as('admin'))
        .send({ url: `${receiver.url}?token=${HOOK_TOKEN}`, types: ['*'] })
        .expect(201);
      receiver.secret = created.body.secret;
      expect(created.body.url).toBe(`${receiver.url}?token=[redacted]`);
      const read = await t.http
        .get('/api/v1/webhooks')
        .set(...as('admin'))
        .expect(200);
      const one = await t.http
        .get(`/api/v1/webhooks/${created.body.id}`)
        .set(...as('admin'))
        .expect(200);
      expect(read.text + one.text + (await auditText('webhook.created'))).not.toContain(HOOK_TOKEN);
      // Its own webhook.created is its first delivery: POSTed to the whole URL, with the URL shown in the body.
      await until(
        async () => receiver.accepted().length,
        (n) => n >= 1,
      );
      expect(receiver.received[0].path).toBe(`/hook?token=${HOOK_TOKEN}`);
      expect(receiver.received[0].body).not.toContain(HOOK_TOKEN);
      expect(JSON.parse(receiver.received[0].body).data.url).toBe(`${receiver.url}?token=[redacted]`);

      // Saved whole before, with its event: shown redacted at once, sealed at the next start, delivered to as before.
      const [{ id: eventId }] = await ds.query(
        `INSERT INTO audit_event (id, org_id, type, actor_type, actor_id, target_type, target_id, data)
         VALUES (gen_random_uuid(), $1, 'webhook.created', 'system', 'test', 'webhook', $2, $3::jsonb) RETURNING id`,
        [org.id, created.body.id, JSON.stringify({ url: `${receiver.url}?token=${HOOK_TOKEN}`, types: ['*'] })],
      );
      await ds.query(`UPDATE webhook_endpoint SET url = $2, url_sealed = NULL WHERE id = $1`, [created.body.id, `${receiver.url}?token=${HOOK_TOKEN}`]);
      const legacy = await t.http
        .get(`/api/v1/webhooks/${created.body.id}`)
        .set(...as('admin'))
        .expect(200);
      expect(legacy.body.url).toBe(`${receiver.url}?token=[redacted]`);
      expect(await auditText('webhook.created')).not.toContain(HOOK_TOKEN);
      await until(async () => receiver.received.some((r) => JSON.parse(r.body).id === eventId), Boolean);
      expect(receiver.received.find((r) => JSON.parse(r.body).id === eventId)!.body).not.toContain(HOOK_TOKEN);
      await t.app.get(WebhooksService).onApplicationBootstrap();
      const [row] = await ds.query(`SELECT url, url_sealed FROM webhook_endpoint WHERE id = $1`, [created.body.id]);
      expect(row.url).toBe(`${receiver.url}?token=[redacted]`);
      expect(open(row.url_sealed)).toBe(`${receiver.url}?token=${HOOK_TOKEN}`);
      await t.http
        .post(`/api/v1/orgs/${org.id}/api-keys`)
        .set(...as('admin'))
        .send({ name: 'after sealing', roles: ['viewer'] })
        .expect(201);
      await until(async () => receiver.received.some((r) => JSON.parse(r.body).type === 'api_key.created'), Boolean);
      expect(receiver.received.every((r) => r.path === `/hook?token=${HOOK_TOKEN}`)).toBe(true);
    });
    it('a token in the path (Slack-style) is delivered to whole and shown redacted (session 36, F-F5)', async () => {
      const receiver = await WebhookReceiver.start();
      receivers.push(receiver);
      const secretPath = 'services/T0ABCDEF1/B0ABCDEF2/q4Lr8ZmA0bXkWc7NeYt2Vd9u';
      const created = await t.http
        .post('/api/v1/webhooks')
        .set(...as('admin'))
        .send({ url: `${receiver.url}/${secretPath}`, types: ['*'] })
        .expect(201);
      receiver.secret = created.body.secret;
      expect(created.body.url).toBe(`${receiver.url}/services/T0ABCDEF1/B0ABCDEF2/[redacted]`);
      const read = await t.http
        .get(`/api/v1/webhooks/${created.body.id}`)
        .set(...as('admin'))
        .expect(200);
      expect(read.text + (await auditText('webhook.created'))).not.toContain('q4Lr8ZmA0bXkWc7NeYt2Vd9u');
      const [row] = await ds.query(`SELECT url, url_sealed FROM webhook_endpoint WHERE id = $1`, [created.body.id]);
      expect(open(row.url_sealed)).toBe(`${receiver.url}/${secretPath}`);
      await until(
        async () => receiver.accepted().length,
        (n) => n >= 1,
      );
      expect(receiver.received[0].path).toBe(`/hook/${secretPath}`);
      expect(receiver.received[0].body).not.toContain('q4Lr8ZmA0bXkWc7NeYt2Vd9u');
      await t.http
        .delete(`/api/v1/webhooks/${created.body.id}`)
        .set(...as('admin'))
        .expect(204);
    });
    it('a token after a delimiter inside a path segment (`;jsessionid=`, `key:`) is sealed and shown redacted (attack round 14, P-F3)', async () => {
      const receiver = await WebhookReceiver.start();
      receivers.push(receiver);
      const token = 'Abc123Def456Ghi789';
      for (const segment of [`ok;jsessionid=${token}`, `key:${token}`]) {
        const created = await t.http
          .post('/api/v1/webhooks')
          .set(...as('admin'))
          .send({ url: `${receiver.url}/${segment}`, types: ['agent.created'] })
          .expect(201);
        expect(created.body.url).toBe(`${receiver.url}/[redacted]`);
        const [row] = await ds.query(`SELECT url, url_sealed FROM webhook_endpoint WHERE id = $1`, [created.body.id]);
        expect(row.url).not.toContain(token);
        expect(open(row.url_sealed)).toBe(`${receiver.url}/${segment}`);
        expect(await auditText('webhook.created')).not.toContain(token);
        await t.http
          .delete(`/api/v1/webhooks/${created.body.id}`)
          .set(...as('admin'))
          .expect(204);
      }
    });
  });

  describe('model providers', () => {
    it('refuse a base URL with a query string or fragment (the key goes in apiKey), storing nothing', async () => {
      for (const baseUrl of ['http://127.0.0.1:9/v1?api-key=sk-in-the-url-123', 'http://127.0.0.1:9/v1#sk-in-the-url-123']) {
        const res = await t.http
          .post('/api/v1/model-providers')
          .set(...as('admin'))
          .send({ name: 'keyed', kind: 'openai-compatible', baseUrl })
          .expect(400);
        expect(res.body).toMatchObject({ code: 'invalid_request', errors: [{ path: 'baseUrl', code: 'url' }] });
        expect(res.body.errors[0].message).toContain('apiKey');
      }
      const list = await t.http
        .get('/api/v1/model-providers')
        .set(...as('viewer'))
        .expect(200);
      expect(list.text).not.toContain('sk-in-the-url');
      expect(await auditText('model_provider.created')).not.toContain('sk-in-the-url');
    });

    it('a provider saved with a query before shows it redacted, in its answers and its audit event', async () => {
      const created = await t.http
        .post('/api/v1/model-providers')
        .set(...as('admin'))
        .send({ name: 'legacy', kind: 'openai-compatible', baseUrl: 'http://127.0.0.1:9/v1' })
        .expect(201);
      await ds.query(`UPDATE model_provider SET base_url = $2 WHERE id = $1`, [created.body.id, 'http://127.0.0.1:9/v1?api-key=sk-legacy-4567']);
      await ds.query(
        `INSERT INTO audit_event (id, org_id, type, actor_type, actor_id, target_type, target_id, data)
         VALUES (gen_random_uuid(), $1, 'model_provider.created', 'system', 'test', 'model_provider', $2, $3::jsonb)`,
        [org.id, created.body.id, JSON.stringify({ name: 'legacy', baseUrl: 'http://127.0.0.1:9/v1?api-key=sk-legacy-4567' })],
      );
      const one = await t.http
        .get(`/api/v1/model-providers/${created.body.id}`)
        .set(...as('viewer'))
        .expect(200);
      expect(one.body.baseUrl).toBe('http://127.0.0.1:9/v1?api-key=[redacted]');
      expect(await auditText('model_provider.created')).not.toContain('sk-legacy');
    });
  });
});
