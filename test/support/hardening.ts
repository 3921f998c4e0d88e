import { DataSource } from 'typeorm';
import { bearer, createTestApp, TestApp } from './test-app';
import { createWorld, World } from './world';

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
