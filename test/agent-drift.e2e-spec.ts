import { ModuleMetadata } from '@nestjs/common';
import { NestFastifyApplication } from '@nestjs/platform-fastify';
import request from 'supertest';
import { createApp } from '../src/app.factory';
import { VersionBuilder } from '../src/agents/version-builder.service';
import { AgentsFixturesModule, AgentsFixturesReleaseTwoModule, FX_NOTES_SCOPE } from './fixtures/agents-fixtures.module';
import { bearer, createOrg, TestApp, testConfig, TestOrg } from './support/test-app';
import { createTestDatabase, TestDatabase } from './support/test-database';

/**
 * A later release of the code changes a tool's definition and drops another. The honest way to
 * show it: publish with release one, stop that server, start release two on the same database
 * (as a deploy would), and read the version there.
 */
describe('drift of published tool definitions across releases (e2e)', () => {
  let db: TestDatabase;
  const config = testConfig();
  let current: NestFastifyApplication | undefined;

  async function boot(imports: ModuleMetadata['imports']): Promise<TestApp> {
    if (current) await current.close();
    const app = await createApp({
      config: { ...config, databaseUrl: db.real ? db.url : undefined },
      database: { url: db.url, poolSize: db.poolSize },
      imports,
      logger: false,
    });
    await app.init();
    await app.getHttpAdapter().getInstance().ready();
    current = app;
    return { app, db, config, adminToken: config.platformAdminToken, http: request(app.getHttpServer()), close: () => app.close() };
  }

  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(async () => {
    await current?.close();
    await db.drop();
  });

  it('lists changed and removed tools in drift, refuses nothing on read, and clears on republish', async () => {
    const one = await boot([AgentsFixturesModule]);
    const org: TestOrg = await createOrg(one, [FX_NOTES_SCOPE]);
    const builder = bearer(org.keys.builder);
    const a = await one.http
      .post('/api/v1/agents')
      .set(...builder)
      .send({ slug: 'drifty', name: 'Drifty' })
      .expect(201);
    const agentId = a.body.id;
    await one.http
      .put(`/api/v1/agents/${agentId}/draft`)
      .set(...builder)
      .send({
        instructions: 'Notes.',
        capabilities: [{ id: 'fx-agents-notes' }, { id: 'fx-agents-echo' }],
        toolOverrides: { fx_agents_write: { name: 'jot' } },
      })
      .expect(200);
    const v1 = await one.http
      .post(`/api/v1/agents/${agentId}/publish`)
      .set(...builder)
      .expect(201);
    expect(v1.body.drift).toEqual([]);
    const pending = await one.http
      .post(`/api/v1/agents/${agentId}/tool-calls`)
      .set(...bearer(org.keys.agent))
      .send({ tool: 'jot', arguments: { text: 'before the deploy' } })
      .expect(202);

    const two = await boot([AgentsFixturesReleaseTwoModule]);
    const version = await two.http
      .get(`/api/v1/agents/${agentId}/versions/1`)
      .set(...bearer(org.keys.agent))
      .expect(200);
    expect(version.body.toolDigests).toEqual(v1.body.toolDigests);
    expect(version.body.drift).toEqual([
      { tool: 'fx_agents_search', reason: 'changed' },
      { tool: 'jot', reason: 'removed' },
    ]);
    const listed = await two.http
      .get(`/api/v1/agents/${agentId}/versions`)
      .set(...bearer(org.keys.viewer))
      .expect(200);
    expect(listed.body.items[0].drift).toEqual(version.body.drift);

    // Calls to a drifted tool are refused, a removed one included (it answered 404 unknown_tool);
    // a name the version never offered is still unknown.
    const callTool = (tool: string, args: object) =>
      two.http
        .post(`/api/v1/agents/${agentId}/tool-calls`)
        .set(...bearer(org.keys.agent))
        .send({ tool, arguments: args });
    for (const [tool, args] of [
      ['jot', { text: 'x' }],
      ['fx_agents_search', { query: 'x' }],
    ] as const) {
      const refused = await callTool(tool, args).expect(409);
      expect(refused.body.code).toBe('tool_definition_changed');
    }
    expect((await callTool('fx_agents_write', { text: 'x' }).expect(404)).body.code).toBe('unknown_tool');
    await callTool('fx_agents_echo', { text: 'still fine' }).expect(200);
    // Approving a call of a tool the code removed since: refused the same way, and it stays pending.
    const approve = await two.http
      .post(`/api/v1/approvals/${pending.body.approvalId}/approve`)
      .set(...bearer(org.keys.approver))
      .send({})
      .expect(409);
    expect(approve.body.code).toBe('tool_definition_changed');
    const approval = await two.http
      .get(`/api/v1/approvals/${pending.body.approvalId}`)
      .set(...bearer(org.keys.approver))
      .expect(200);
    expect(approval.body.status).toBe('pending');

    // What the executor reads: the current digest beside the pinned one.
    const built = await two.app.get(VersionBuilder).build(org.id, [FX_NOTES_SCOPE], agentId, 1);
    const search = built.tools.find((t) => t.name === 'fx_agents_search')!;
    expect(search.description).toBe('Search the notes, newest first.');
    expect(search.pinnedDigest).toBe(v1.body.toolDigests.fx_agents_search);
    expect(search.digest).not.toBe(search.pinnedDigest);
    const echo = built.tools.find((t) => t.name === 'fx_agents_echo')!;
    expect(echo.digest).toBe(echo.pinnedDigest);
    expect(built.tools.map((t) => t.name)).not.toContain('jot');

    // The draft no longer validates (its override names a tool release two does not have)...
    const check = await two.http
      .post(`/api/v1/agents/${agentId}/draft/validate`)
      .set(...builder)
      .expect(200);
    expect(check.body.errors).toEqual([{ path: 'toolOverrides.fx_agents_write', code: 'unknown_tool', message: expect.any(String) }]);
    // ...and once fixed, the same instructions publish as version 2, pinning release two's definitions.
    await two.http
      .put(`/api/v1/agents/${agentId}/draft`)
      .set(...builder)
      .send({ instructions: 'Notes.', capabilities: [{ id: 'fx-agents-notes' }, { id: 'fx-agents-echo' }] })
      .expect(200);
    const v2 = await two.http
      .post(`/api/v1/agents/${agentId}/publish`)
      .set(...builder)
      .expect(201);
    expect(v2.body.version).toBe(2);
    expect(v2.body.drift).toEqual([]);
    expect(v2.body.toolDigests.fx_agents_search).toBe(search.digest);
    const stillOld = await two.http
      .get(`/api/v1/agents/${agentId}/versions/1`)
      .set(...bearer(org.keys.viewer))
      .expect(200);
    expect(stillOld.body.drift).toHaveLength(2);
  });

  it("republishes an unchanged spec as a new version when only the code's definitions changed", async () => {
    const one = await boot([AgentsFixturesModule]);
    const org = await createOrg(one, [FX_NOTES_SCOPE]);
    const builder = bearer(org.keys.builder);
    const a = await one.http
      .post('/api/v1/agents')
      .set(...builder)
      .send({ slug: 'same-spec', name: 'Same spec' })
      .expect(201);
    const draft = { instructions: 'Search only.', capabilities: [{ id: 'fx-agents-notes' }] };
    await one.http
      .put(`/api/v1/agents/${a.body.id}/draft`)
      .set(...builder)
      .send(draft)
      .expect(200);
    const v1 = await one.http
      .post(`/api/v1/agents/${a.body.id}/publish`)
      .set(...builder)
      .expect(201);
    await one.http
      .post(`/api/v1/agents/${a.body.id}/publish`)
      .set(...builder)
      .expect(200);

    const two = await boot([AgentsFixturesReleaseTwoModule]);
    const v2 = await two.http
      .post(`/api/v1/agents/${a.body.id}/publish`)
      .set(...builder)
      .expect(201);
    expect(v2.body.version).toBe(2);
    expect(v2.body.specHash).toBe(v1.body.specHash);
    expect(Object.keys(v2.body.toolDigests)).toEqual(['fx_agents_search']);
    await two.http
      .post(`/api/v1/agents/${a.body.id}/publish`)
      .set(...builder)
      .expect(200);
  });
});
