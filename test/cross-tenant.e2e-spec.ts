import { randomUUID } from 'node:crypto';
import { Route, stopAtEventStream, walkRoutes } from './support/routes';
import { bearer, createTestApp, TestApp } from './support/test-app';
import { createWorld, fillPath, tableCounts, VALID_BODIES, World } from './support/world';

/**
 * Two organizations with the same kinds of objects. Every route that takes an id is called by one
 * organization's admin with the other's real ids, and with random ids: always 404, never a byte
 * of the other tenant's data, nothing changed. Lists never show the other tenant's objects.
 */

/** Routes that are the platform admin's: they act on every organization by design. */
const platformOnly = (r: Route) => Array.isArray(r.access) && r.access.every((a) => a === 'platform');

describe('tenant isolation on every route', () => {
  let t: TestApp;
  let a: World;
  let b: World;
  beforeAll(async () => {
    t = await createTestApp();
    a = await createWorld(t, [], 'SECRET-OF-A');
    b = await createWorld(t, [], 'b-own');
  });
  afterAll(() => t.close());

  const send = (route: Route, url: string, token: string) => {
    const key = `${route.method} ${route.path}`;
    const req = t.http[route.method.toLowerCase() as 'get'](url).set(...bearer(token));
    if (route.method === 'GET' || route.method === 'DELETE') return req;
    if (!(key in VALID_BODIES)) throw new Error(`add a valid body for ${key} to VALID_BODIES`);
    const body = VALID_BODIES[key];
    return body === undefined ? req : req.set('Accept', 'application/json, text/event-stream').send(body as object);
  };

  it("answers 404 to another organization's real ids, changing nothing and showing nothing", async () => {
    // A route whose only parameters name code (a capability, a tool) acts on the caller's own organization.
    const routes = walkRoutes(t).filter((r) => r.access !== 'public' && !platformOnly(r) && r.path.replace(/:(capabilityId|toolId)\b/g, '').includes(':'));
    expect(routes.length).toBeGreaterThan(10);
    const before = await tableCounts(t);
    const leaks: string[] = [];
    for (const route of routes) {
      const url = fillPath(route.path, a.ids, randomUUID);
      const res = await send(route, url, b.org.keys.admin);
      if (res.status !== 404 || res.body.code !== 'not_found') leaks.push(`${route.method} ${route.path} -> ${res.status} ${res.body.code ?? ''}`);
      if (JSON.stringify(res.body).includes(a.marker) || res.text?.includes(a.marker)) leaks.push(`${route.method} ${route.path} showed A's data`);
    }
    expect(leaks).toEqual([]);
    expect(await tableCounts(t)).toEqual(before);
  });

  it('answers 404 to random ids', async () => {
    const routes = walkRoutes(t).filter(
      (r) =>
        r.access !== 'public' &&
        !platformOnly(r) &&
        r.path
          .replace(':orgId', '')
          .replace(/:(capabilityId|toolId)\b/g, '')
          .includes(':'),
    );
    const wrong: string[] = [];
    for (const route of routes) {
      // orgId must be the caller's own (another org's is the case above); every other id is random.
      const url = fillPath(route.path, { orgId: b.org.id, version: '1' }, randomUUID);
      const res = await send(route, url, b.org.keys.admin);
      if (res.status !== 404) wrong.push(`${route.method} ${route.path} -> ${res.status} ${res.body.code ?? ''}`);
    }
    expect(wrong).toEqual([]);
  });

  it("never lists another organization's objects", async () => {
    const lists = walkRoutes(t).filter((r) => r.method === 'GET' && !r.path.includes(':') && r.access !== 'public' && !platformOnly(r));
    expect(lists.length).toBeGreaterThan(3);
    for (const route of lists) {
      // An event stream is taken at its headers (test/events.e2e-spec.ts shows what it sends whom).
      const res = await t.http
        .get(route.path)
        .set(...bearer(b.org.keys.admin))
        .parse(stopAtEventStream);
      const text = JSON.stringify(res.body);
      expect(res.status).toBeLessThan(500);
      expect(text).not.toContain(a.marker);
      for (const id of Object.values(a.ids)) if (id !== 'latest') expect(text).not.toContain(id);
    }
  });
});
