import fc from 'fast-check';
import { randomUUID } from 'node:crypto';
import { Route, stopAtEventStream, walkRoutes } from './support/routes';
import { ExecFixturesModule, fixtureRuns, FX_EXEC_SCOPE } from './fixtures/exec-fixtures.module';
import { bearer, createOrg, createTestApp, TestApp } from './support/test-app';
import { createWorld, fillPath, tableCounts, VALID_BODIES, World } from './support/world';

/**
 * Hostile input against every route that takes any: random and malicious bodies, query strings
 * and headers. The product must answer each with a problem document, never a 5xx, and write
 * nothing. The routes come from the router itself, so a new route is attacked the day it lands.
 */
const RUNS = Number(process.env.FUZZ_RUNS ?? 25);

const hostileString = fc.oneof(
  fc.string({ maxLength: 40 }),
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.constantFrom(
    '',
    ' ',
    '\u0000',
    '\uFEFF',
    '\u202E',
    'e\u0301',
    '\uD800',
    '👩‍👩‍👧',
    "'; DROP TABLE org; --",
    '../../etc/passwd',
    '{{7*7}}',
    '<script>',
    'null',
    'NaN',
    '-1',
    '1e309',
  ),
  fc.integer({ min: 1000, max: 200_000 }).map((n) => 'x'.repeat(n)),
);

/** Nesting deep enough to hurt a naive recursive validator. */
const deep = fc.integer({ min: 50, max: 2000 }).map((depth) => {
  let v: unknown = 'bottom';
  for (let i = 0; i < depth; i++) v = { a: v };
  return v;
});

/** Fields an attacker would love the server to accept. */
const smuggled = fc.constantFrom(
  'orgId',
  'org_id',
  'status',
  'version',
  'decidedBy',
  'id',
  'createdAt',
  'requestedBy',
  '__proto__',
  'constructor',
  'publishedBy',
  'roles',
  'scopes',
);

const hostileValue = fc.oneof(fc.anything({ maxDepth: 4 }), hostileString, deep, fc.constantFrom(null, true, 0, -1, 1e308, [], {}));

/** Always invalid: either not an object, or an object carrying one property no DTO declares. */
const hostileBody = fc.oneof(
  fc.oneof(hostileString, fc.array(fc.anything({ maxDepth: 2 }), { maxLength: 5 }), fc.constantFrom(null, 0, true, 'x')),
  fc.tuple(fc.dictionary(fc.string({ maxLength: 12 }), hostileValue, { maxKeys: 6 }), smuggled, hostileValue).map(([obj, key, value]) => {
    const body = { ...obj };
    Object.defineProperty(body, key, { value, enumerable: true, configurable: true, writable: true });
    return body;
  }),
);

const hostileQuery = fc.dictionary(
  fc.constantFrom('limit', 'cursor', 'status', 'type', 'since', 'agentId', 'runId', 'version', 'format', 'category', 'tag', 'risk', 'x'),
  hostileString,
  { maxKeys: 4 },
);

function isProblem(res: { status: number; headers: Record<string, string>; body: { code?: unknown; status?: unknown } }): boolean {
  return res.headers['content-type']?.startsWith('application/problem+json') && typeof res.body.code === 'string' && res.body.status === res.status;
}

describe('hostile input on every route', () => {
  let t: TestApp;
  let world: World;
  let routes: Route[];
  beforeAll(async () => {
    t = await createTestApp();
    world = await createWorld(t);
    routes = walkRoutes(t).filter((r) => r.access !== 'public');
  });
  afterAll(() => t.close());

  const tokenFor = (r: Route) =>
    Array.isArray(r.access) && r.access.includes('platform') && !r.access.some((a) => a !== 'platform') ? t.adminToken : world.org.keys.admin;

  it('refuses every hostile body with a 4xx problem document and writes nothing', async () => {
    const withBody = routes.filter((r) => r.body);
    expect(withBody.length).toBeGreaterThan(3);
    const before = await tableCounts(t);
    for (const route of withBody) {
      await fc.assert(
        fc.asyncProperty(hostileBody, async (body) => {
          // The one "smuggled" key that is a real field of a route, alone and well-typed, is a valid body there.
          fc.pre(
            !(
              route.path.endsWith('/scopes') &&
              body !== null &&
              typeof body === 'object' &&
              Object.keys(body).join() === 'scopes' &&
              Array.isArray((body as { scopes: unknown }).scopes)
            ),
          );
          // `null` reads as no body, `{}` (src/common/validation.ts), and a smuggled key whose value is
          // `undefined` is not sent at all: either is valid where every field is optional.
          const sent = JSON.stringify(body);
          fc.pre(!((body === null || sent === '{}') && JSON.stringify(VALID_BODIES[`${route.method} ${route.path}`]) === '{}'));
          const url = fillPath(route.path, world.ids, randomUUID);
          const res = await t.http[route.method.toLowerCase() as 'post'](url)
            .set(...bearer(tokenFor(route)))
            .set('Content-Type', 'application/json')
            .send(sent);
          if (res.status < 400 || res.status >= 500 || !isProblem(res)) {
            throw new Error(`${route.method} ${route.path} answered ${res.status}: ${JSON.stringify(res.body).slice(0, 300)}`);
          }
        }),
        { numRuns: RUNS },
      );
    }
    expect(await tableCounts(t)).toEqual(before);
  });

  it('never answers a hostile query string or header with a 5xx', async () => {
    for (const route of routes) {
      await fc.assert(
        fc.asyncProperty(hostileQuery, hostileString, async (query, header) => {
          const url = fillPath(route.path, world.ids, randomUUID);
          const req = t.http[route.method.toLowerCase() as 'get'](url)
            .parse(stopAtEventStream)
            .query(query)
            .set(...bearer(tokenFor(route)))
            .set('X-Request-Id', header.slice(0, 200).replace(/[^\x20-\x7e]/g, ''))
            .set('Idempotency-Key', header.slice(0, 300).replace(/[^\x20-\x7e]/g, '') || 'k');
          const res = route.method === 'GET' || route.method === 'DELETE' ? await req : await req.send({});
          if (res.status >= 500)
            throw new Error(`${route.method} ${route.path}?${new URLSearchParams(query)} answered ${res.status}: ${JSON.stringify(res.body).slice(0, 300)}`);
          if (res.status >= 400 && !isProblem(res)) throw new Error(`${route.method} ${route.path} answered ${res.status} without a problem document`);
        }),
        { numRuns: Math.ceil(RUNS / 2) },
      );
    }
  }, 300_000);

  it('refuses U+0000 in any string of a valid body or query with 400 naming where, and writes nothing', async () => {
    // PostgreSQL stores no U+0000 in text or jsonb: every write route answered 500 for one.
    const before = await tableCounts(t);
    const withNul = (value: unknown, at: string[]): unknown =>
      at.length === 0
        ? `${value}\u0000`
        : Array.isArray(value)
          ? value.map((v, i) => (String(i) === at[0] ? withNul(v, at.slice(1)) : v))
          : { ...(value as object), [at[0]]: withNul((value as Record<string, unknown>)[at[0]], at.slice(1)) };
    const stringPaths = (value: unknown, at: string[] = []): string[][] =>
      typeof value === 'string' ? [at] : value && typeof value === 'object' ? Object.entries(value).flatMap(([k, v]) => stringPaths(v, [...at, k])) : [];
    let tried = 0;
    for (const route of routes) {
      const body = VALID_BODIES[`${route.method} ${route.path}`];
      for (const at of stringPaths(body)) {
        const res = await t.http[route.method.toLowerCase() as 'post'](fillPath(route.path, world.ids, randomUUID))
          .set(...bearer(tokenFor(route)))
          .set('Content-Type', 'application/json')
          .send(JSON.stringify(withNul(body, at)));
        expect([route.path, res.status, res.body.code, res.body.errors?.[0]]).toEqual([
          route.path,
          400,
          'invalid_request',
          { path: at.reduce((p, k) => (/^\d+$/.test(k) ? `${p}[${k}]` : p ? `${p}.${k}` : k), ''), code: 'nul_character', message: expect.any(String) },
        ]);
        tried++;
      }
    }
    expect(tried).toBeGreaterThanOrEqual(10);
    const key = await t.http
      .post(`/api/v1/orgs/${world.org.id}/api-keys`)
      .set(...bearer(world.org.keys.admin))
      .send({ name: 'a\u0000b', roles: ['viewer'] })
      .expect(400);
    expect(key.body.errors[0]).toMatchObject({ path: 'name', code: 'nul_character' });
    const query = await t.http
      .get('/api/v1/tool-calls')
      .query({ runId: 'run\u0000' })
      .set(...bearer(world.org.keys.viewer))
      .expect(400);
    expect(query.body.errors[0]).toMatchObject({ path: 'runId', code: 'nul_character' });
    const inKey = await t.http
      .post('/api/v1/skills')
      .set(...bearer(world.org.keys.builder))
      .send({ name: 's', description: 'd', instructions: 'i', 'x\u0000': 1 })
      .expect(400);
    expect(inKey.body.errors[0]).toMatchObject({ path: 'x\\u0000', code: 'nul_character' });
    expect(await tableCounts(t)).toEqual(before);
  });

  it('refuses an element of a list of objects (or an entry of a dictionary of them) that is not an object, naming it', async () => {
    // class-validator took `[[]]` as a list of no problems: a capability without its id was stored, a message without content sent.
    const before = await tableCounts(t);
    const draft = `/api/v1/agents/${world.ids.agentId}/draft`;
    for (const [body, path] of [
      [{ instructions: 'x', capabilities: [[]] }, 'capabilities[0]'],
      [{ instructions: 'x', capabilities: [{ id: 'clock' }, [{ id: 'clock' }]] }, 'capabilities[1]'],
      [{ instructions: 'x', capabilities: [null] }, 'capabilities[0]'],
      [{ instructions: 'x', capabilities: [], toolOverrides: { now: [] } }, 'toolOverrides.now'],
    ] as const) {
      const res = await t.http
        .put(draft)
        .set(...bearer(world.org.keys.builder))
        .send(body)
        .expect(400);
      expect(res.body.errors).toContainEqual({ path, code: 'isObject', message: `${path} must be an object` });
    }
    const run = await t.http
      .post(`/api/v1/agents/${world.ids.agentId}/runs`)
      .set(...bearer(world.org.keys.agent))
      .send({ input: 'x', messages: [[{ role: 'user', content: 'q' }]] })
      .expect(400);
    expect(run.body.errors[0]).toMatchObject({ path: 'messages[0]', code: 'isObject' });
    expect(await tableCounts(t)).toEqual(before);
  });

  it('refuses bodies nested deeper than 64 levels before anything recurses into them', async () => {
    // Found by this suite: 2,000 levels of brackets in a tool's arguments overflowed the stack (500).
    const deepJson = '{"a":'.repeat(3000) + '1' + '}'.repeat(3000);
    for (const route of routes.filter((r) => r.body)) {
      const res = await t.http[route.method.toLowerCase() as 'post'](fillPath(route.path, world.ids, randomUUID))
        .set(...bearer(tokenFor(route)))
        .set('Content-Type', 'application/json')
        .send(deepJson);
      expect([route.path, res.status, res.body.code]).toEqual([route.path, 400, 'invalid_request']);
      expect(res.body.detail).toMatch(/deeper than 64/);
    }
  });

  it('refuses bodies naming more than 10,000 distinct members before they are parsed, and reads one of 10,000', async () => {
    // JSON.parse makes a hidden class for each new name: a megabyte of them held the event loop up to a second (row 145).
    const names = (n: number) =>
      JSON.stringify({ m: Array.from({ length: n / 10 }, (_, i) => Object.fromEntries(Array.from({ length: 10 }, (_, j) => [`k${i}_${j}`, 0]))) });
    const before = await tableCounts(t);
    for (const route of routes.filter((r) => r.body)) {
      const res = await t.http[route.method.toLowerCase() as 'post'](fillPath(route.path, world.ids, randomUUID))
        .set(...bearer(tokenFor(route)))
        .set('Content-Type', 'application/json')
        .send(names(10_010));
      expect([route.path, res.status, res.body.code]).toEqual([route.path, 400, 'invalid_request']);
      expect([route.path, res.body.detail, res.body.errors]).toEqual([
        route.path,
        'The request body names more than 10000 distinct members (object keys).',
        [{ path: '', code: 'too_many_keys', message: 'the body names more than 10000 distinct members (object keys)' }],
      ]);
    }
    expect(await tableCounts(t)).toEqual(before);
    // At the bound the body is parsed, and judged as any other (here: an unknown property).
    const read = await t.http
      .post('/api/v1/agents')
      .set(...bearer(world.org.keys.builder))
      .set('Content-Type', 'application/json')
      .send(names(9_990))
      .expect(400);
    expect(read.body.errors).toEqual(expect.arrayContaining([expect.objectContaining({ path: 'm' })]));
  });

  it('answers hostile bearer tokens with 401, never a 5xx', async () => {
    await fc.assert(
      fc.asyncProperty(hostileString, async (token) => {
        const clean = token.replace(/[^\x21-\x7e]/g, '').slice(0, 8000);
        const res = await t.http.get('/api/v1/me').set('Authorization', `Bearer ${clean}`);
        expect(res.status).toBe(401);
        expect(isProblem(res)).toBe(true);
      }),
      { numRuns: RUNS * 2 },
    );
  });
});

describe("a model's arguments are untrusted input", () => {
  let t: TestApp;
  let agentId: string;
  let agentKey: string;
  beforeAll(async () => {
    t = await createTestApp({ imports: [ExecFixturesModule] });
    const org = await createOrg(t, [FX_EXEC_SCOPE]);
    agentKey = org.keys.agent;
    const agent = await t.http
      .post('/api/v1/agents')
      .set(...bearer(org.keys.builder))
      .send({ slug: 'fuzzed', name: 'Fuzzed' })
      .expect(201);
    agentId = agent.body.id;
    await t.http
      .put(`/api/v1/agents/${agentId}/draft`)
      .set(...bearer(org.keys.builder))
      .send({ instructions: '', capabilities: [{ id: 'fx-exec-tools' }] })
      .expect(200);
    await t.http
      .post(`/api/v1/agents/${agentId}/publish`)
      .set(...bearer(org.keys.builder))
      .expect(201);
  });
  afterAll(() => t.close());

  const hostileArguments = fc.oneof(
    hostileValue,
    fc.dictionary(fc.constantFrom('query', 'limit', 'tag', 'count', 'ms', '__proto__', 'constructor', 'orgId'), hostileValue, { maxKeys: 4 }),
    fc.record({ query: hostileString, limit: fc.oneof(fc.integer(), fc.double(), hostileString) }),
    fc.record({ tag: hostileString, count: fc.oneof(fc.integer(), fc.constant(1e308), hostileString) }),
  );

  it('validates them before anything runs: a 4xx naming the argument, never a 5xx, and no side effect without approval', async () => {
    const sideEffectsBefore = fixtureRuns.filter((r) => r.tool === 'fx-exec-write' || r.tool === 'fx-exec-delete').length;
    await fc.assert(
      fc.asyncProperty(fc.constantFrom('fx-exec-read', 'fx-exec-write', 'fx-exec-delete', 'fx-exec-huge'), hostileArguments, async (tool, args) => {
        const res = await t.http
          .post(`/api/v1/agents/${agentId}/tool-calls`)
          .set(...bearer(agentKey))
          .set('Content-Type', 'application/json')
          .send(JSON.stringify({ tool, arguments: args }));
        if (res.status >= 500) throw new Error(`${tool} answered ${res.status}: ${JSON.stringify(res.body).slice(0, 300)}`);
        if (res.status >= 400) {
          expect(isProblem(res)).toBe(true);
          if (res.status === 422) {
            expect(res.body.code).toBe('invalid_arguments');
            for (const e of res.body.errors) expect(e.path).toMatch(/^arguments/);
          }
        }
        if (tool !== 'fx-exec-read' && tool !== 'fx-exec-huge') expect(res.status).not.toBe(200);
      }),
      { numRuns: RUNS * 4 },
    );
    expect(fixtureRuns.filter((r) => r.tool === 'fx-exec-write' || r.tool === 'fx-exec-delete').length).toBe(sideEffectsBefore);
  });
});
