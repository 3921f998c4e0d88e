import { ModuleMetadata } from '@nestjs/common';
import { NestFastifyApplication } from '@nestjs/platform-fastify';
import { randomBytes } from 'node:crypto';
import request from 'supertest';
import TestAgent from 'supertest/lib/agent';
import { createApp, CreateAppOptions } from '../../src/app.factory';
import { AppConfig } from '../../src/config/app-config';
import { DEFAULT_RUNS_CONFIG } from '../../src/config/runs-config';
import type { Role } from '../../src/auth/principal';
import { createTestDatabase, TestDatabase } from './test-database';

export interface TestApp {
  app: NestFastifyApplication;
  db: TestDatabase;
  config: AppConfig;
  adminToken: string;
  http: TestAgent;
  close(): Promise<void>;
}

export function testConfig(overrides: Partial<AppConfig> = {}): AppConfig {
  return {
    port: 0,
    host: '127.0.0.1',
    dataDir: './.data-test-unused',
    platformAdminToken: 'cpa_test_' + randomBytes(24).toString('base64url'),
    approvalTtlSeconds: 86400,
    logLevel: 'silent',
    toolTimeoutMs: 30000,
    toolLeaseGraceMs: 60000,
    sweepIntervalMs: 15000,
    webhookDeliveryRetentionMs: 7 * 86_400_000,
    webhookMaxPendingPerEndpoint: 10_000,
    mcpApprovalWaitSeconds: 60,
    databasePoolSize: 10,
    // Tests drive hundreds of requests per key; the rate-limit suite turns limits on for itself.
    rateLimit: { windowSeconds: 60, perKey: 0, perOrg: 0, authFailures: 0, redisPrefix: 'cp:rl:' },
    secrets: { key: randomBytes(32) },
    // Tests run their fixture servers on loopback ports.
    egress: { allowedHosts: ['127.0.0.1', 'localhost'], connectTimeoutMs: 5000, requestTimeoutMs: 30000 },
    mcpToolsTtlSeconds: 300,
    // Runs retry a failing model quickly in tests; the suites that measure it set their own.
    runs: { ...DEFAULT_RUNS_CONFIG, modelRetryBaseMs: 20, pollIntervalMs: 200 },
    corsOrigins: [],
    events: { heartbeatMs: 15_000, pollMs: 5_000, webhookTimeoutMs: 10_000, webhookRetryBaseMs: 5_000, webhookRetryWindowMs: 86_400_000 },
    ...overrides,
  };
}

/**
 * The real application on a fresh database of its own. Call `close()` in afterAll. With `database`,
 * on that one instead (several apps in turn, as a node restarted with other settings), which
 * `close()` then leaves for its owner to drop.
 */
export async function createTestApp(
  options: {
    imports?: ModuleMetadata['imports'];
    config?: Partial<AppConfig>;
    rateLimitStore?: CreateAppOptions['rateLimitStore'];
    consoleDir?: string;
    database?: TestDatabase;
  } = {},
): Promise<TestApp> {
  const db = options.database ?? (await createTestDatabase());
  const config = testConfig({ ...options.config, databaseUrl: db.real ? db.url : undefined });
  const app = await createApp({
    config,
    database: { url: db.url, poolSize: db.poolSize },
    imports: options.imports,
    rateLimitStore: options.rateLimitStore,
    logger: false,
    consoleDir: options.consoleDir,
  });
  await app.init();
  await app.getHttpAdapter().getInstance().ready();
  return {
    app,
    db,
    config,
    adminToken: config.platformAdminToken,
    http: request(app.getHttpServer()),
    async close() {
      await app.close();
      if (!options.database) await db.drop();
    },
  };
}

export interface TestOrg {
  id: string;
  slug: string;
  /** One key per role, plus any extra ones asked for. */
  keys: Record<Role, string>;
  keyIds: Record<Role, string>;
}

let orgCounter = 0;

/** A fresh organization with one key per role (and the given scopes). */
export async function createOrg(t: TestApp, scopes: string[] = []): Promise<TestOrg> {
  const slug = `org-${process.pid}-${++orgCounter}-${randomBytes(3).toString('hex')}`;
  const org = await t.http.post('/api/v1/orgs').set('Authorization', `Bearer ${t.adminToken}`).send({ slug, name: slug, scopes }).expect(201);
  const keys = {} as Record<Role, string>;
  const keyIds = {} as Record<Role, string>;
  for (const role of ['viewer', 'builder', 'agent', 'approver', 'admin'] as Role[]) {
    const res = await t.http
      .post(`/api/v1/orgs/${org.body.id}/api-keys`)
      .set('Authorization', `Bearer ${t.adminToken}`)
      .send({ name: role, roles: [role] })
      .expect(201);
    keys[role] = res.body.token;
    keyIds[role] = res.body.id;
  }
  return { id: org.body.id, slug, keys, keyIds };
}

/** An agent of the organization made, drafted and published by its builder key; its id. */
export async function publishAgent(t: TestApp, org: TestOrg, slug: string, draft: object): Promise<string> {
  const agent = (
    await t.http
      .post('/api/v1/agents')
      .set(...bearer(org.keys.builder))
      .send({ slug, name: slug })
      .expect(201)
  ).body.id as string;
  await t.http
    .put(`/api/v1/agents/${agent}/draft`)
    .set(...bearer(org.keys.builder))
    .send(draft)
    .expect(200);
  await t.http
    .post(`/api/v1/agents/${agent}/publish`)
    .set(...bearer(org.keys.builder))
    .expect(201);
  return agent;
}

/**
 * A `remote` MCP connection of `org` to `url` named `name` (its tools as the server lists them),
 * `readOnly` tools marked `read_only` (calls then run without approval), and a published agent of
 * that connection alone, slug `name`: what a spec about MCP calls needs before its first call.
 */
export async function publishMcpAgent(t: TestApp, org: TestOrg, name: string, url: string, readOnly: readonly string[] = []): Promise<string> {
  const connection = (
    await t.http
      .post('/api/v1/mcp-connections')
      .set(...bearer(org.keys.admin))
      .send({ server: 'remote', name, url })
      .expect(201)
  ).body.id as string;
  for (const tool of readOnly) {
    await t.http
      .put(`/api/v1/mcp-connections/${connection}/tools/${tool}/risk`)
      .set(...bearer(org.keys.admin))
      .send({ risk: 'read_only' })
      .expect(200);
  }
  return publishAgent(t, org, name, { instructions: '', capabilities: [], mcpServers: [{ connection }] });
}

/**
 * One JSON-RPC message to an agent's MCP endpoint as `token`; the message the answer's first
 * event carries (the endpoint answers a request as an event stream).
 */
export async function mcpMessage(t: TestApp, agentId: string, token: string, message: object, query = ''): Promise<any> {
  const res = await t.http
    .post(`/api/v1/agents/${agentId}/mcp${query}`)
    .set(...bearer(token))
    .set('Accept', 'application/json, text/event-stream')
    .send(message);
  const data = res.text.split('\n').find((l) => l.startsWith('data: '));
  if (data === undefined) throw new Error(`no event in the answer: ${res.status} ${res.text.slice(0, 500)}`);
  return JSON.parse(data.slice(6));
}

export function bearer(token: string): [string, string] {
  return ['Authorization', `Bearer ${token}`];
}
