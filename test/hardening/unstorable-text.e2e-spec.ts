import { randomUUID } from 'node:crypto';
import { bearer } from '../support/test-app';
import { assertRefusedAtEveryPosition, countRows, hardeningWorld, HardeningWorld } from '../support/hardening';

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

// Property runs make many requests; a loaded CI machine must not fail them on time alone.
jest.setTimeout(180_000);

describe('lone UTF-16 surrogates are refused before anything runs', () => {
  let h: HardeningWorld;
  beforeAll(async () => {
    h = await hardeningWorld();
  }, 180_000);
  afterAll(() => h.t.close());

  it("in any string of any write route's body: 400 naming the path, nothing written, no tool run", async () => {
    await assertRefusedAtEveryPosition(h, { positions: stringPaths, values: LONE, inject: withEscape, code: 'lone_surrogate', min: { routes: 6 } });
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
