import { bearer, createOrg, createTestApp, TestApp, TestOrg } from './support/test-app';

/** Walking a list page by page yields every item once, newest first, whatever the page size. */
describe('cursor pagination of lists', () => {
  let t: TestApp;
  let org: TestOrg;
  beforeAll(async () => {
    t = await createTestApp();
    org = await createOrg(t);
    const as = bearer(org.keys.admin);
    for (let i = 0; i < 3; i++) {
      await t.http.post('/api/v1/knowledge/collections').set(...as).send({ name: `c${i}` }).expect(201);
      await t.http.post('/api/v1/skills').set(...as).send({ name: `skill-${i}`, description: 'd', instructions: 'i' }).expect(201);
      await t.http.post('/api/v1/agents').set(...as).send({ slug: `agent-${i}`, name: `a${i}` }).expect(201);
    }
  });
  afterAll(() => t.close());

  async function walk(path: string, limit: number): Promise<string[]> {
    const ids: string[] = [];
    let cursor: string | null = null;
    do {
      const res: { body: { items: { id: string }[]; nextCursor: string | null } } = await t.http
        .get(path)
        .query({ limit, ...(cursor ? { cursor } : {}) })
        .set(...bearer(org.keys.admin))
        .expect(200);
      expect(res.body.items.length).toBeLessThanOrEqual(limit);
      ids.push(...res.body.items.map((i) => i.id));
      cursor = res.body.nextCursor;
    } while (cursor);
    return ids;
  }

  it.each(['/api/v1/knowledge/collections', '/api/v1/skills', '/api/v1/agents', 'KEYS'])('%s: every item once, in the same order at any page size', async (route) => {
    const path = route === 'KEYS' ? `/api/v1/orgs/${org.id}/api-keys` : route;
    const all = await walk(path, 200);
    expect(all.length).toBeGreaterThanOrEqual(3);
    expect(new Set(all).size).toBe(all.length);
    expect(await walk(path, 1)).toEqual(all);
    expect(await walk(path, 2)).toEqual(all);
  });
});
