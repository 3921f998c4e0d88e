import { randomUUID } from 'node:crypto';
import { Route, stopAtEventStream, walkRoutes } from './support/routes';
import { bearer, createTestApp, TestApp } from './support/test-app';
import { createWorld, fillPath, validBody, World } from './support/world';

/**
 * Who may call what, for every route the router serves, tried for real: anonymous, each role of
 * the owning organization, another organization's admin, and the platform admin.
 *
 * `ok` means the guard let the caller through (any answer but 401/403; a 400 for an empty body or
 * a 404 for a deleted object is still "let through"). For another organization's admin, `404`
 * means "indistinguishable from missing", and `ok` means the route serves the caller's own data.
 *
 * THIS TABLE IS THE PERMISSION MODEL. A diff in it is a permission change: review it as one.
 * A new route without a line here fails the test.
 */
type Outcome = 'ok' | 401 | 403 | 404;
const PRINCIPALS = ['anon', 'viewer', 'builder', 'agent', 'approver', 'admin', 'foreign', 'platform'] as const;
type Who = (typeof PRINCIPALS)[number];

//                                                          anon viewer builder agent approver admin foreign platform
const MATRIX: Record<string, string> = {
  'GET /api/v1/agents': '401  ok     ok      403   ok       ok    ok      403',
  'POST /api/v1/agents': '401  403    ok      403   403      ok    ok      403',
  'GET /api/v1/agents/:agentId': '401  ok     ok      403   ok       ok    404     403',
  'PUT /api/v1/agents/:agentId/draft': '401  403    ok      403   403      ok    404     403',
  'POST /api/v1/agents/:agentId/draft/validate': '401  403    ok      403   403      ok    404     403',
  'POST /api/v1/agents/:agentId/publish': '401  403    ok      403   403      ok    404     403',
  'POST /api/v1/agents/:agentId/tool-calls': '401  403    403     ok    403      ok    404     403',
  'POST /api/v1/agents/:agentId/mcp': '401  403    403     ok    403      ok    404     403',
  'GET /api/v1/agents/:agentId/mcp': '401  403    403     ok    403      ok    404     403',
  'DELETE /api/v1/agents/:agentId/mcp': '401  403    403     ok    403      ok    404     403',
  'GET /api/v1/agents/:agentId/versions': '401  ok     ok      ok    ok       ok    404     403',
  'GET /api/v1/agents/:agentId/versions/:version': '401  ok     ok      ok    ok       ok    404     403',
  'GET /api/v1/agents/:agentId/versions/:version/manifest': '401  ok     ok      ok    ok       ok    404     403',
  'GET /api/v1/agents/:agentId/versions/:version/tools': '401  ok     ok      ok    ok       ok    404     403',
  'POST /api/v1/agents/:agentId/versions/:version/retire': '401  403    ok      403   403      ok    404     403',
  'GET /api/v1/tools/disabled': '401  ok     ok      403   ok       ok    ok      403',
  'PUT /api/v1/tools/:capabilityId/:toolId/disabled': '401  403    403     403   403      ok    ok      403',
  'GET /api/v1/agents/capabilities': '401  ok     ok      ok    ok       ok    ok      ok',
  'GET /api/v1/approvals': '401  ok     ok      403   ok       ok    ok      403',
  'GET /api/v1/approvals/:id': '401  ok     ok      403   ok       ok    404     403',
  'POST /api/v1/approvals/:id/approve': '401  403    403     403   ok       ok    404     403',
  'POST /api/v1/approvals/:id/reject': '401  403    403     403   ok       ok    404     403',
  'GET /api/v1/audit-events': '401  403    403     403   403      ok    ok      403',
  'GET /api/v1/events': '401  403    403     403   ok       ok    ok      403',
  'GET /api/v1/knowledge/collections': '401  ok     ok      403   ok       ok    ok      403',
  'POST /api/v1/knowledge/collections': '401  403    ok      403   403      ok    ok      403',
  'GET /api/v1/knowledge/collections/:id': '401  ok     ok      403   ok       ok    404     403',
  'DELETE /api/v1/knowledge/collections/:id': '401  403    ok      403   403      ok    404     403',
  'GET /api/v1/knowledge/collections/:id/documents': '401  ok     ok      403   ok       ok    404     403',
  'POST /api/v1/knowledge/collections/:id/documents': '401  403    ok      403   403      ok    404     403',
  'GET /api/v1/knowledge/collections/:id/documents/:docId': '401  ok     ok      403   ok       ok    404     403',
  'DELETE /api/v1/knowledge/collections/:id/documents/:docId': '401 403   ok      403   403      ok    404     403',
  'GET /api/v1/mcp-servers': '401  ok     ok      ok    ok       ok    ok      ok',
  'GET /api/v1/mcp-connections': '401  ok     ok      403   ok       ok    ok      403',
  'POST /api/v1/mcp-connections': '401  403    403     403   403      ok    ok      403',
  'GET /api/v1/mcp-connections/:id': '401  ok     ok      403   ok       ok    404     403',
  'DELETE /api/v1/mcp-connections/:id': '401  403    403     403   403      ok    404     403',
  'POST /api/v1/mcp-connections/:id/sync': '401  403    403     403   403      ok    404     403',
  'PUT /api/v1/mcp-connections/:id/credentials': '401  403    403     403   403      ok    404     403',
  'PUT /api/v1/mcp-connections/:id/url': '401  403    403     403   403      ok    404     403',
  'PUT /api/v1/mcp-connections/:id/tools/:tool/risk': '401  403    403     403   403      ok    404     403',
  'GET /api/v1/me': '401  ok     ok      ok    ok       ok    ok      ok',
  'GET /api/v1/orgs': '401  403    403     403   403      403   403     ok',
  'POST /api/v1/orgs': '401  403    403     403   403      403   403     ok',
  'GET /api/v1/orgs/:orgId': '401  ok     ok      ok    ok       ok    404     ok',
  'PUT /api/v1/orgs/:orgId/scopes': '401  403    403     403   403      403   403     ok',
  'GET /api/v1/orgs/:orgId/api-key-policy': '401  403    403     403   403      ok    404     ok',
  'PUT /api/v1/orgs/:orgId/api-key-policy': '401  403    403     403   403      ok    404     ok',
  'GET /api/v1/orgs/:orgId/api-keys': '401  403    403     403   403      ok    404     ok',
  'POST /api/v1/orgs/:orgId/api-keys': '401  403    403     403   403      ok    404     ok',
  'GET /api/v1/orgs/:orgId/usage': '401  403    403     403   403      ok    404     ok',
  'DELETE /api/v1/orgs/:orgId/api-keys/:keyId': '401  403    403     403   403      ok    404     ok',
  'GET /api/v1/skills': '401  ok     ok      403   ok       ok    ok      403',
  'POST /api/v1/skills': '401  403    ok      403   403      ok    ok      403',
  'GET /api/v1/skills/:id': '401  ok     ok      403   ok       ok    404     403',
  'DELETE /api/v1/skills/:id': '401  403    ok      403   403      ok    404     403',
  'GET /api/v1/tool-calls': '401  ok     ok      ok    ok       ok    ok      403',
  'GET /api/v1/tool-calls/:id': '401  ok     ok      ok    ok       ok    404     403',
  'GET /api/v1/tool-calls/:id/result': '401  ok     ok      ok    ok       ok    404     403',
  'GET /api/v1/model-providers': '401  ok     ok      403   ok       ok    ok      403',
  'POST /api/v1/model-providers': '401  403    403     403   403      ok    ok      403',
  'GET /api/v1/model-providers/:id': '401  ok     ok      403   ok       ok    404     403',
  'DELETE /api/v1/model-providers/:id': '401  403    403     403   403      ok    404     403',
  'PUT /api/v1/model-providers/:id/api-key': '401  403    403     403   403      ok    404     403',
  'POST /api/v1/agents/:agentId/runs': '401  403    ok      ok    403      ok    404     403',
  'GET /api/v1/runs': '401  ok     ok      ok    ok       ok    ok      403',
  'GET /api/v1/principals': '401  ok     ok      403   ok       ok    ok      403',
  'GET /api/v1/runs/:id': '401  ok     ok      ok    ok       ok    404     403',
  'GET /api/v1/runs/:id/events': '401  ok     ok      ok    ok       ok    404     403',
  'POST /api/v1/runs/:id/cancel': '401  403    ok      ok    403      ok    404     403',
  'POST /api/v1/webhooks': '401  403    403     403   403      ok    ok      403',
  'GET /api/v1/webhooks': '401  403    403     403   403      ok    ok      403',
  'GET /api/v1/webhooks/:id': '401  403    403     403   403      ok    404     403',
  'DELETE /api/v1/webhooks/:id': '401  403    403     403   403      ok    404     403',
  'POST /api/v1/webhooks/:id/rotate-secret': '401  403    403     403   403      ok    404     403',
  'GET /api/v1/webhooks/:id/deliveries': '401  403    403     403   403      ok    404     403',
  // Public, reads nothing; 404 for everyone here, where no identity provider is configured (test/oidc.e2e-spec.ts).
  'GET /.well-known/oauth-protected-resource/api/v1/agents/:agentId/mcp': 'ok   ok     ok      ok    ok       ok    404     ok',
  'GET /health': 'ok   ok     ok      ok    ok       ok    ok      ok',
  'GET /health/ready': 'ok   ok     ok      ok    ok       ok    ok      ok',
  // Without METRICS_TOKEN (as here) the scrape is open; with it, only that token (test/observability.e2e-spec.ts).
  'GET /metrics': 'ok   ok     ok      ok    ok       ok    ok      ok',
};

function expected(line: string): Record<Who, Outcome> {
  const cells = line.trim().split(/\s+/);
  if (cells.length !== PRINCIPALS.length) throw new Error(`matrix line has ${cells.length} cells: ${line}`);
  return Object.fromEntries(PRINCIPALS.map((p, i) => [p, cells[i] === 'ok' ? 'ok' : (Number(cells[i]) as Outcome)])) as Record<Who, Outcome>;
}

function observed(status: number): Outcome {
  return status === 401 || status === 403 ? status : 'ok';
}

describe('authorization matrix', () => {
  let t: TestApp;
  let world: World;
  let other: World;
  let routes: Route[];
  beforeAll(async () => {
    t = await createTestApp();
    world = await createWorld(t, [], 'matrix');
    other = await createWorld(t, [], 'other');
    routes = walkRoutes(t);
  });
  afterAll(() => t.close());

  it('has a line for every route, and a route for every line', () => {
    const served = routes.map((r) => `${r.method} ${r.path}`).sort();
    expect(served).toEqual(Object.keys(MATRIX).sort());
  });

  it('answers every principal on every route as the table says', async () => {
    const token: Record<Who, string | undefined> = {
      anon: undefined,
      viewer: world.org.keys.viewer,
      builder: world.org.keys.builder,
      agent: world.org.keys.agent,
      approver: world.org.keys.approver,
      admin: world.org.keys.admin,
      foreign: other.org.keys.admin,
      platform: t.adminToken,
    };
    const diffs: string[] = [];
    for (const route of routes) {
      const key = `${route.method} ${route.path}`;
      const want = expected(MATRIX[key] ?? '');
      // Platform first and anonymous next: they change nothing; the writers come last.
      for (const who of ['anon', 'platform', 'viewer', 'agent', 'approver', 'foreign', 'builder', 'admin'] as Who[]) {
        const url = fillPath(route.path, world.ids, randomUUID);
        let req = t.http[route.method.toLowerCase() as 'get'](url).parse(stopAtEventStream);
        if (token[who]) req = req.set(...bearer(token[who]!));
        const { known, body } = validBody(route.method, route.path);
        if (route.method !== 'GET' && route.method !== 'DELETE' && body !== undefined)
          req = req.set('Accept', 'application/json, text/event-stream').send(body as object);
        else if (route.method !== 'GET' && route.method !== 'DELETE' && !known) req = req.send({});
        const res = await req;
        let got: Outcome = observed(res.status);
        if (who === 'foreign' && res.status === 404 && route.path.includes(':')) got = 404;
        if (got !== want[who]) diffs.push(`${key}: ${who} expected ${want[who]}, got ${res.status} ${res.body?.code ?? ''}`);
      }
    }
    expect(diffs).toEqual([]);
  });
});
