import { DataSource } from 'typeorm';
import { ApiKeyUsage } from '../src/auth/api-key-usage';
import { ApiKeysRepository } from '../src/auth/api-keys.repository';
import { bearer, createOrg, createTestApp, TestApp, TestOrg } from './support/test-app';

/**
 * `lastUsedAt`: when a key last authenticated a request, so an administrator finds the keys nothing
 * uses any more. Each node keeps the latest use of each key and writes them once a sweep; the tests
 * call the sweep where a node's timer would.
 */
describe('when API keys were last used (e2e)', () => {
  let t: TestApp;
  let org: TestOrg;
  let usage: ApiKeyUsage;

  beforeAll(async () => {
    t = await createTestApp();
    org = await createOrg(t);
    usage = t.app.get(ApiKeyUsage);
  });
  afterAll(() => t.close());

  const newKey = async (name: string) =>
    (
      await t.http
        .post(`/api/v1/orgs/${org.id}/api-keys`)
        .set(...bearer(org.keys.admin))
        .send({ name, roles: ['viewer'] })
        .expect(201)
    ).body as { id: string; token: string; lastUsedAt: string | null };
  const lastUsed = async (id: string) =>
    (
      (
        await t.http
          .get(`/api/v1/orgs/${org.id}/api-keys?limit=200`)
          .set(...bearer(org.keys.admin))
          .expect(200)
      ).body.items as { id: string; lastUsedAt: string | null }[]
    ).find((k) => k.id === id)!.lastUsedAt;

  it('is null until the key is used, then when it last authenticated a request, once a sweep wrote it', async () => {
    const key = await newKey('reader');
    expect(key.lastUsedAt).toBeNull();
    await usage.sweepOnce();
    expect(await lastUsed(key.id)).toBeNull();
    const before = Date.now();
    await t.http
      .get('/api/v1/agents')
      .set(...bearer(key.token))
      .expect(200);
    // Refused for its role, the key still authenticated the request: it is in use.
    await t.http
      .post('/api/v1/agents')
      .set(...bearer(key.token))
      .send({ slug: 'no', name: 'no' })
      .expect(403);
    const after = Date.now();
    await usage.sweepOnce();
    const first = Date.parse((await lastUsed(key.id))!);
    expect(first).toBeGreaterThanOrEqual(before - 1);
    expect(first).toBeLessThanOrEqual(after + 1);
    await new Promise((r) => setTimeout(r, 20));
    await t.http
      .get('/api/v1/me')
      .set(...bearer(key.token))
      .expect(200);
    await usage.sweepOnce();
    expect(Date.parse((await lastUsed(key.id))!)).toBeGreaterThan(first);
  });

  it('never moves back: a node writing an older use after another wrote a later one keeps the later', async () => {
    const key = await newKey('two nodes');
    const repo = t.app.get(ApiKeysRepository);
    const later = new Date(Date.now() - 1000);
    await repo.recordUse([{ id: key.id, at: later }]);
    await repo.recordUse([{ id: key.id, at: new Date(later.getTime() - 60_000) }]);
    expect(await lastUsed(key.id)).toBe(later.toISOString());
  });

  it('neither waits for a key row another transaction holds nor loses its use: it is written at the next sweep', async () => {
    const key = await newKey('held');
    await t.http
      .get('/api/v1/agents')
      .set(...bearer(key.token))
      .expect(200);
    const ds = t.app.get(DataSource);
    const runner = ds.createQueryRunner();
    await runner.connect();
    await runner.startTransaction();
    try {
      await runner.query(`SELECT 1 FROM api_key WHERE id = $1 FOR UPDATE`, [key.id]);
      if (process.env.DATABASE_URL) {
        // On the embedded database there is one connection: nothing else can run beside the lock.
        await usage.sweepOnce();
        expect(await lastUsed(key.id)).toBeNull();
      }
    } finally {
      await runner.commitTransaction();
      await runner.release();
    }
    await usage.sweepOnce();
    expect(await lastUsed(key.id)).not.toBeNull();
  });
});
