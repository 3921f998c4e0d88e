import fc from 'fast-check';
import { randomUUID } from 'node:crypto';
import { bearer } from '../support/test-app';
import { countRows, hardeningWorld, HardeningWorld, isProblem } from '../support/hardening';
import { walkRoutes } from '../support/routes';
import { fillPath, tableCounts, VALID_BODIES } from '../support/world';

/**
 * Issue 13, class 2: text PostgreSQL cannot store. A lone UTF-16 surrogate (`"\ud800"`, valid
 * JSON) answered 500 on write routes holding jsonb, after a read-only tool had already run and
 * with no record of the call; in text columns it was silently stored as U+FFFD. It must be
 * refused like U+0000: 400 invalid_request naming the path, before anything runs.
 */
const LONE = ['\\ud800', '\\udbff', '\\udc00', '\\udfff', 'a\\ud83d', '\\ude00b', '\\udc00\\ud800'];

/** The JSON text of `body` with `escape` appended to the string at `at` (JSON escapes: no JS string holds them safely). */
function withEscape(body: unknown, at: string[], escape: string): string {
  const marker = `__lone_${randomUUID()}__`;
  const set = (value: unknown, path: string[]): unknown =>
    path.length === 0
      ? `${value}${marker}`
      : Array.isArray(value)
        ? value.map((v, i) => (String(i) === path[0] ? set(v, path.slice(1)) : v))
        : { ...(value as object), [path[0]]: set((value as Record<string, unknown>)[path[0]], path.slice(1)) };
  return JSON.stringify(set(body, at)).replace(marker, escape);
}

function stringPaths(value: unknown, at: string[] = []): string[][] {
  if (typeof value === 'string') return [at];
  if (value && typeof value === 'object') return Object.entries(value).flatMap(([k, v]) => stringPaths(v, [...at, k]));
  return [];
}

const pathOf = (at: string[]) => at.reduce((p, k) => (/^\d+$/.test(k) ? `${p}[${k}]` : p ? `${p}.${k}` : k), '');

// Property runs make many requests; a loaded CI machine must not fail them on time alone.
jest.setTimeout(180_000);

describe('lone UTF-16 surrogates are refused before anything runs', () => {
  let h: HardeningWorld;
  beforeAll(async () => {
    h = await hardeningWorld();
  }, 180_000);
  afterAll(() => h.t.close());

  it("in any string of any write route's body: 400 naming the path, nothing written, no tool run", async () => {
    const routes = walkRoutes(h.t).filter((r) => `${r.method} ${r.path}` in VALID_BODIES && stringPaths(VALID_BODIES[`${r.method} ${r.path}`]).length > 0);
    expect(routes.length).toBeGreaterThanOrEqual(6);
    const cases = routes.flatMap((r) => stringPaths(VALID_BODIES[`${r.method} ${r.path}`]).map((at) => ({ route: r, at })));
    const before = await tableCounts(h.t);
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...cases), fc.constantFrom(...LONE), async ({ route, at }, escape) => {
        const access = Array.isArray(route.access) ? route.access : [];
        const token =
          access.includes('platform') && access.every((a) => a === 'platform')
            ? h.t.adminToken
            : route.path.includes('tool-calls') || route.path.endsWith('/mcp')
              ? h.world.org.keys.agent
              : h.world.org.keys.admin;
        const body = VALID_BODIES[`${route.method} ${route.path}`];
        const res = await h.t.http[route.method.toLowerCase() as 'post'](fillPath(route.path, { ...h.world.ids, agentId: h.agentId }, randomUUID))
          .set(...bearer(token))
          .set('Content-Type', 'application/json')
          .send(withEscape(body, at, escape));
        expect([route.path, res.status, res.body.code, res.body.errors?.[0]?.path, res.body.errors?.[0]?.code]).toEqual([
          route.path,
          400,
          'invalid_request',
          pathOf(at),
          'lone_surrogate',
        ]);
        expect(isProblem(res)).toBe(true);
      }),
      { numRuns: Math.max(40, cases.length * 2) },
    );
    expect(await tableCounts(h.t)).toEqual(before);
  });

  it('in an object key, a free-form object, a query string; paired surrogates (real emoji) are text and kept', async () => {
    const builder = bearer(h.world.org.keys.builder);
    const docs = `/api/v1/knowledge/collections/${h.world.ids.collectionId}/documents`;
    const key = await h.t.http
      .post(docs)
      .set(...builder)
      .set('Content-Type', 'application/json')
      .send('{"title":"t","content":"c","metadata":{"a\\udc00":1}}')
      .expect(400);
    expect(key.body.errors[0]).toMatchObject({ path: 'metadata.a\\udc00', code: 'lone_surrogate' });
    const meta = await h.t.http
      .post(docs)
      .set(...builder)
      .set('Content-Type', 'application/json')
      .send('{"title":"t","content":"c","metadata":{"deep":[{"x":"\\ud800"}]}}')
      .expect(400);
    expect(meta.body.errors[0]).toMatchObject({ path: 'metadata.deep[0].x', code: 'lone_surrogate' });
    const query = await h.t.http
      .get('/api/v1/tool-calls')
      .query({ runId: 'r\ud800' })
      .set(...bearer(h.world.org.keys.viewer));
    // The query string arrives percent-encoded as UTF-8 (U+FFFD for the lone half) or is refused as a bad URL: never a 5xx.
    expect(query.status).toBeLessThan(500);
    const emoji = await h.t.http
      .post(docs)
      .set(...builder)
      .set('Content-Type', 'application/json')
      .send('{"title":"\\ud83d\\ude00 refunds","content":"c"}')
      .expect(201);
    expect(emoji.body.title).toBe('😀 refunds');
  });

  it('in tool arguments: refused before the (read-only) tool runs, so no call goes unrecorded', async () => {
    const calls = await countRows(h.ds, 'tool_call');
    const res = await h.t.http
      .post(`/api/v1/agents/${h.agentId}/tool-calls`)
      .set(...bearer(h.world.org.keys.agent))
      .set('Content-Type', 'application/json')
      .send('{"tool":"search_knowledge","arguments":{"query":"refunds \\ud800"}}')
      .expect(400);
    expect(res.body.errors[0]).toMatchObject({ path: 'arguments.query', code: 'lone_surrogate' });
    expect(await countRows(h.ds, 'tool_call')).toBe(calls);
  });
});
