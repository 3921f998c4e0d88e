import { randomUUID } from 'node:crypto';
import { stopAtEventStream, walkRoutes } from './support/routes';
import { bearer, createTestApp, publishAgent, TestApp } from './support/test-app';
import { createWorld, fillPath, World } from './support/world';

/**
 * Headers that keep a browser from misreading an answer or framing a page. Every answer says it
 * is what its Content-Type says (`X-Content-Type-Options: nosniff`); the interactive docs, where
 * people paste a bearer token and press Execute on `DELETE` routes, cannot be framed and run only
 * their own scripts. Both were missing (fuzz session 28, tester c, finding 3); the console has its
 * own (src/console/serve-console.spec.ts). The docs page working under its policy in a real
 * browser: test/api-docs-browser.e2e-spec.ts.
 */
describe('security headers (e2e)', () => {
  let t: TestApp;
  let world: World;
  beforeAll(async () => {
    t = await createTestApp();
    world = await createWorld(t, [], 'headers');
  });
  afterAll(() => t.close());

  it('every route of the router answers with nosniff: refused anonymously, read with a key, and not found', async () => {
    const missing: string[] = [];
    for (const route of walkRoutes(t)) {
      const url = fillPath(route.path, world.ids, randomUUID);
      const method = route.method.toLowerCase() as 'get';
      const asked = [t.http[method](url).parse(stopAtEventStream)];
      // Reads only: a key's writes would change the world the other rows of this loop read.
      if (route.method === 'GET')
        asked.push(
          t.http
            .get(url)
            .parse(stopAtEventStream)
            .set(...bearer(world.org.keys.admin)),
        );
      for (const req of asked) {
        const res = await req;
        if (res.headers['x-content-type-options'] !== 'nosniff') missing.push(`${route.method} ${route.path}: ${res.status}`);
        // Attack round 12, H-F5: no API answer may be kept by a cache (a browser's disk cache included).
        // The capability catalog is code, revalidated by its ETag (private, no-cache).
        const caching = route.path === '/api/v1/agents/capabilities' && res.status === 200 ? 'private, no-cache' : 'no-store';
        if (route.path.startsWith('/api/v1/') && res.headers['cache-control'] !== caching) missing.push(`${route.method} ${route.path}: cache-control`);
      }
    }
    for (const url of ['/api/v1/no-such-route', '/no-such-page', '/console']) {
      const res = await t.http.get(url);
      if (res.headers['x-content-type-options'] !== 'nosniff') missing.push(`GET ${url}: ${res.status}`);
    }
    expect(missing).toEqual([]);
  });

  it('an answer that shows a secret once is never stored by a cache: a new key, and a refusal (attack round 12, H-F5)', async () => {
    const key = await t.http
      .post(`/api/v1/orgs/${world.org.id}/api-keys`)
      .set(...bearer(world.org.keys.admin))
      .send({ name: 'cached?', roles: ['viewer'] })
      .expect(201);
    expect(key.body.token).toMatch(/^cpk_/);
    expect(key.headers['cache-control']).toBe('no-store');
    const refused = await t.http.post(`/api/v1/orgs/${world.org.id}/api-keys`).send({ name: 'x', roles: ['viewer'] });
    expect([refused.status, refused.headers['cache-control']]).toEqual([401, 'no-store']);
  });

  it('answers written by hand carry it too: an event stream and an MCP answer', async () => {
    const head = await t.http
      .head('/api/v1/events')
      .set(...bearer(world.org.keys.admin))
      .expect(200);
    expect(head.headers['content-type']).toMatch(/^text\/event-stream/);
    expect(head.headers['x-content-type-options']).toBe('nosniff');
    // A published agent's endpoint, so that the answer is the SDK's event stream: the world's agent
    // is unpublished, and its refusal (409, a problem document) carried no-store while every MCP
    // answer said the SDK's `no-cache, no-transform` (attack round 22, AG-F2).
    const agentId = await publishAgent(t, world.org, 'headers-mcp', { instructions: 'x', capabilities: [] });
    const mcp = await t.http
      .post(`/api/v1/agents/${agentId}/mcp`)
      .set(...bearer(world.org.keys.agent))
      .set('Accept', 'application/json, text/event-stream')
      .send({ jsonrpc: '2.0', id: 1, method: 'ping' })
      .expect(200);
    expect(mcp.headers['content-type']).toMatch(/^text\/event-stream/);
    expect(mcp.headers['x-content-type-options']).toBe('nosniff');
    expect(head.headers['cache-control']).toBe('no-store');
    // With the SDK's no-transform, which keeps proxies from buffering the stream, while it sends one.
    expect(mcp.headers['cache-control']).toMatch(/^no-store(, no-transform)?$/);
  });

  it("the docs page, its init script, Swagger UI's files and the documents cannot be framed, run only their own scripts, send no referrer", async () => {
    const urls = [
      '/api/docs',
      '/api/docs/',
      '/api/docs/index.html',
      '/api/docs/swagger-ui-init.js',
      '/api/docs/docs/swagger-ui-init.js',
      '/api/docs/swagger-ui-bundle.js',
      '/api/docs/swagger-ui-standalone-preset.js',
      '/api/docs/swagger-ui.css',
      '/api/docs/favicon-32x32.png',
      '/api/docs-json',
      '/api/docs-yaml',
    ];
    for (const url of urls) {
      const res = await t.http.get(url).buffer(true);
      expect([url, res.status]).toEqual([url, 200]);
      const csp = String(res.headers['content-security-policy'] ?? '');
      expect([url, csp]).toEqual([url, expect.stringContaining("frame-ancestors 'none'")]);
      expect(csp).toContain("script-src 'self';");
      expect(csp).toContain("default-src 'self'");
      expect(csp).toContain("object-src 'none'");
      expect(res.headers).toMatchObject({ 'x-frame-options': 'DENY', 'x-content-type-options': 'nosniff', 'referrer-policy': 'no-referrer' });
    }
    // The page's policy is the page's: the API's answers are not HTML, and pay for no such header.
    const me = await t.http
      .get('/api/v1/me')
      .set(...bearer(world.org.keys.viewer))
      .expect(200);
    expect(me.headers['content-security-policy']).toBeUndefined();
  });
});
