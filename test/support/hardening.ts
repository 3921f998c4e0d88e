import fc from 'fast-check';
import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { walkRoutes } from './routes';
import { bearer, createTestApp, TestApp } from './test-app';
import { createWorld, fillPath, tableCounts, VALID_BODIES, World } from './world';

/**
 * The world the hardening suites attack (test/hardening/, one file per defect class of issue 13):
 * an organization with a published agent offering the knowledge tools over one collection.
 */
export interface HardeningWorld {
  t: TestApp;
  world: World;
  agentId: string;
  ds: DataSource;
}

export async function hardeningWorld(config: Parameters<typeof createTestApp>[0] = {}): Promise<HardeningWorld> {
  const t = await createTestApp(config);
  const world = await createWorld(t, ['knowledge:read', 'memory:read', 'memory:write'], 'hardening');
  const as = bearer(world.org.keys.builder);
  const agentId = world.ids.agentId;
  await t.http
    .put(`/api/v1/agents/${agentId}/draft`)
    .set(...as)
    .send({
      instructions: 'Answer from the handbook.',
      capabilities: [{ id: 'knowledge' }, { id: 'memory' }],
      resources: { knowledgeCollections: [world.ids.collectionId] },
    })
    .expect(200);
  await t.http
    .post(`/api/v1/agents/${agentId}/publish`)
    .set(...as)
    .expect(201);
  return { t, world, agentId, ds: t.app.get(DataSource) };
}

export function isProblem(res: { status: number; headers: Record<string, string>; body: { code?: unknown; status?: unknown } }): boolean {
  return Boolean(res.headers['content-type']?.startsWith('application/problem+json')) && typeof res.body.code === 'string' && res.body.status === res.status;
}

export async function countRows(ds: DataSource, table: string): Promise<number> {
  const [{ n }] = await ds.query(`SELECT count(*)::int AS n FROM "${table}"`);
  return n;
}

/** A path as the API names it: `capabilities[0].config.units`. */
export const pathOf = (at: string[]) => at.reduce((p, k) => (/^\d+$/.test(k) ? `${p}[${k}]` : p ? `${p}.${k}` : k), '');

/**
 * A property over every write route with a body (VALID_BODIES): the body's JSON text with one of
 * its positions (`positions`) made hostile (`inject`: one of `values` written there) is refused
 * with 400 `invalid_request` whose first error names that position with `code`, as a problem
 * document, and nothing is written anywhere.
 */
export async function assertRefusedAtEveryPosition(
  h: HardeningWorld,
  spec: {
    positions: (body: unknown) => string[][];
    values: readonly string[];
    inject: (body: unknown, at: string[], value: string) => string;
    code: string;
    min: { routes?: number; cases?: number };
  },
): Promise<void> {
  const routes = walkRoutes(h.t).filter((r) => `${r.method} ${r.path}` in VALID_BODIES && spec.positions(VALID_BODIES[`${r.method} ${r.path}`]).length > 0);
  const cases = routes.flatMap((route) => spec.positions(VALID_BODIES[`${route.method} ${route.path}`]).map((at) => ({ route, at })));
  expect(routes.length).toBeGreaterThanOrEqual(spec.min.routes ?? 1);
  expect(cases.length).toBeGreaterThanOrEqual(spec.min.cases ?? 1);
  const before = await tableCounts(h.t);
  await fc.assert(
    fc.asyncProperty(fc.constantFrom(...cases), fc.constantFrom(...spec.values), async ({ route, at }, value) => {
      const access = Array.isArray(route.access) ? route.access : [];
      const token =
        access.includes('platform') && access.every((a) => a === 'platform')
          ? h.t.adminToken
          : route.path.includes('tool-calls') || route.path.endsWith('/mcp')
            ? h.world.org.keys.agent
            : h.world.org.keys.admin;
      const res = await h.t.http[route.method.toLowerCase() as 'post'](fillPath(route.path, { ...h.world.ids, agentId: h.agentId }, randomUUID))
        .set(...bearer(token))
        .set('Content-Type', 'application/json')
        .send(spec.inject(VALID_BODIES[`${route.method} ${route.path}`], at, value));
      expect([route.path, res.status, res.body.code, res.body.errors?.[0]?.path, res.body.errors?.[0]?.code]).toEqual([
        route.path,
        400,
        'invalid_request',
        pathOf(at),
        spec.code,
      ]);
      expect(isProblem(res)).toBe(true);
    }),
    { numRuns: Math.max(40, cases.length * 2) },
  );
  expect(await tableCounts(h.t)).toEqual(before);
}
