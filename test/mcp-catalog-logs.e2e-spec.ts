import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import request from 'supertest';
import { FixtureMcpServer, startFixtureMcpServer } from './support/mcp-fixture-server';
import { ServerProcess, startServerProcess, stopServerProcess } from './support/server-process';
import { until } from './support/until';

/**
 * API.md "Secrets and outbound connections": a connection's credentials never appear in a log
 * line. The server runs as `npm start` runs it, logging everything it can (LOG_LEVEL=trace), and
 * the test reads its real output (pino's JSON lines and Nest's) while a connection is created,
 * synced, called, and fails against a loopback vendor server that demands the credential and,
 * like careless vendors, echoes what it was sent in its refusals.
 */
describe('MCP credentials and the log (e2e)', () => {
  const SECRET = `Bearer log-secret-${randomBytes(8).toString('hex')}`;
  const ROTATED = `Bearer log-rotated-${randomBytes(8).toString('hex')}`;
  const adminToken = 'cpa_logs_' + 'q'.repeat(24);
  let server: ServerProcess;
  let vendor: FixtureMcpServer;

  beforeAll(async () => {
    vendor = await startFixtureMcpServer({ requireAuthorization: SECRET });
    server = await startServerProcess({
      DATA_DIR: mkdtempSync(join(tmpdir(), 'cp-logs-')),
      PLATFORM_ADMIN_TOKEN: adminToken,
      SECRETS_KEY: randomBytes(32).toString('base64'),
      EGRESS_ALLOWED_HOSTS: '127.0.0.1',
      LOG_LEVEL: 'trace',
      TOOL_TIMEOUT_MS: '1500',
      RATE_LIMIT_PER_KEY: '0',
      RATE_LIMIT_PER_ORG: '0',
    });
  }, 180_000);
  afterAll(async () => {
    if (server) await stopServerProcess(server);
    await vendor?.close();
  });

  const http = () => request(server.url);
  const as = (token: string) => ['Authorization', `Bearer ${token}`] as [string, string];

  it('creating, syncing, calling and failing log no credential, not even what the vendor echoes', async () => {
    const org = (
      await http()
        .post('/api/v1/orgs')
        .set(...as(adminToken))
        .send({ slug: 'logs', name: 'Logs', scopes: ['mcp:remote'] })
        .expect(201)
    ).body;
    const keys: Record<string, string> = {};
    for (const role of ['admin', 'builder', 'agent']) {
      keys[role] = (
        await http()
          .post(`/api/v1/orgs/${org.id}/api-keys`)
          .set(...as(adminToken))
          .send({ name: role, roles: [role] })
          .expect(201)
      ).body.token;
    }

    // A wrong credential first: the vendor refuses, echoing it; the connection is not created.
    const refused = await http()
      .post('/api/v1/mcp-connections')
      .set(...as(keys.admin))
      .send({ server: 'remote', name: 'wrong', url: vendor.url, credentials: { authorization: ROTATED } });
    expect(refused.status).toBe(422);

    const connection = (
      await http()
        .post('/api/v1/mcp-connections')
        .set(...as(keys.admin))
        .send({ server: 'remote', name: 'vendor', url: vendor.url, credentials: { authorization: SECRET } })
        .expect(201)
    ).body;
    await http()
      .post(`/api/v1/mcp-connections/${connection.id}/sync`)
      .set(...as(keys.admin))
      .expect(200);
    for (const tool of ['lookup', 'fail', 'hang']) {
      await http()
        .put(`/api/v1/mcp-connections/${connection.id}/tools/${tool}/risk`)
        .set(...as(keys.admin))
        .send({ risk: 'read_only' })
        .expect(200);
    }
    const agent = (
      await http()
        .post('/api/v1/agents')
        .set(...as(keys.builder))
        .send({ slug: 'logged', name: 'Logged' })
        .expect(201)
    ).body;
    await http()
      .put(`/api/v1/agents/${agent.id}/draft`)
      .set(...as(keys.builder))
      .send({ instructions: '', capabilities: [], mcpServers: [{ connection: connection.id, tools: ['lookup', 'fail', 'hang'] }] })
      .expect(200);
    await http()
      .post(`/api/v1/agents/${agent.id}/publish`)
      .set(...as(keys.builder))
      .expect(201);
    const call = (tool: string, args: object = {}) =>
      http()
        .post(`/api/v1/agents/${agent.id}/tool-calls`)
        .set(...as(keys.agent))
        .send({ tool, arguments: args })
        .expect(200);

    expect((await call('lookup', { id: 'c-1' })).body.status).toBe('succeeded');
    expect((await call('fail')).body).toMatchObject({ status: 'failed', error: { code: 'tool_error' } });
    expect((await call('hang')).body).toMatchObject({ status: 'failed', error: { code: 'timeout' } });

    // The vendor rotates its credential: every use of ours is refused now, each refusal echoing it.
    vendor.state.requireAuthorization = `Bearer vendor-side-${randomBytes(4).toString('hex')}`;
    const failedSync = await http()
      .post(`/api/v1/mcp-connections/${connection.id}/sync`)
      .set(...as(keys.admin))
      .expect(200);
    expect(failedSync.body.status).toBe('error');
    // A new client (the pooled one was dropped with the failed sync) is refused at its handshake.
    expect((await call('lookup', { id: 'c-2' })).body).toMatchObject({ status: 'failed', error: { code: 'upstream_unavailable' } });
    await http()
      .put(`/api/v1/mcp-connections/${connection.id}/credentials`)
      .set(...as(keys.admin))
      .send({ credentials: { authorization: ROTATED } })
      .expect(200);
    expect(
      (
        await http()
          .post(`/api/v1/mcp-connections/${connection.id}/sync`)
          .set(...as(keys.admin))
          .expect(200)
      ).body.status,
    ).toBe('error');

    // The vendor really got (and echoed) both values, so a leak had every chance.
    expect(vendor.authorizations).toEqual(expect.arrayContaining([SECRET, ROTATED]));
    // The log holds what happened (request lines naming the connection) and none of the values.
    const log = await until(
      async () => server.output(),
      (out) => out.includes(`/api/v1/mcp-connections/${connection.id}/sync`),
      10_000,
    );
    expect(log).toContain(`/api/v1/agents/${agent.id}/tool-calls`);
    // The refused creation is logged as a warning with its status: failures reach the log too.
    expect(log.split('\n').some((line) => line.includes('"statusCode":422') && line.includes('/api/v1/mcp-connections'))).toBe(true);
    for (const secret of [SECRET, ROTATED]) {
      const value = secret.slice('Bearer '.length);
      expect(log).not.toContain(value);
      expect(log).not.toContain(Buffer.from(value).toString('base64'));
    }
  }, 120_000);
});
