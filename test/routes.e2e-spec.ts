import { Controller, Get, Module } from '@nestjs/common';
import { walkRoutes } from './support/routes';
import { createTestApp, TestApp } from './support/test-app';

describe('every route declares who may call it', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(() => t.close());

  it('finds the routes', () => {
    const routes = walkRoutes(t);
    expect(routes.length).toBeGreaterThan(8);
    expect(routes).toContainEqual(expect.objectContaining({ method: 'POST', path: '/api/v1/orgs', access: ['platform'] }));
    expect(routes.find((r) => r.path === '/api/v1/orgs' && r.method === 'POST')?.body?.name).toBe('CreateOrgDto');
  });

  it("has no route without roles, and only health, metrics and the MCP endpoints' protected-resource metadata are public", () => {
    const routes = walkRoutes(t);
    const undeclared = routes.filter((r) => r.access === undefined).map((r) => `${r.method} ${r.path}`);
    expect(undeclared).toEqual([]);
    const publicRoutes = routes.filter((r) => r.access === 'public').map((r) => `${r.method} ${r.path}`);
    expect(publicRoutes.sort()).toEqual([
      'GET /.well-known/oauth-protected-resource/api/v1/agents/:agentId/mcp',
      'GET /health',
      'GET /health/ready',
      'GET /metrics',
    ]);
  });

  it('documents every route in the OpenAPI document', async () => {
    const doc = (await t.http.get('/api/docs-json').expect(200)).body as { paths: Record<string, Record<string, unknown>> };
    const missing = walkRoutes(t)
      .map((r) => ({ ...r, openapi: r.path.replace(/:(\w+)/g, '{$1}') }))
      .filter((r) => !doc.paths[r.openapi]?.[r.method.toLowerCase()])
      .map((r) => `${r.method} ${r.path}`);
    expect(missing).toEqual([]);
  });
});

describe('a route that declares nothing', () => {
  @Controller('api/v1/undeclared')
  class UndeclaredController {
    @Get()
    read() {
      return { secret: true };
    }
  }
  @Module({ controllers: [UndeclaredController] })
  class UndeclaredModule {}

  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp({ imports: [UndeclaredModule] });
  });
  afterAll(() => t.close());

  it('is closed to everyone, the platform admin included', async () => {
    await t.http.get('/api/v1/undeclared').expect(401);
    const res = await t.http.get('/api/v1/undeclared').set('Authorization', `Bearer ${t.adminToken}`).expect(403);
    expect(res.body.code).toBe('forbidden');
    expect(
      walkRoutes(t)
        .filter((r) => r.access === undefined)
        .map((r) => r.path),
    ).toEqual(['/api/v1/undeclared']);
  });
});
