import { DataSource } from 'typeorm';
import { MAX_MODEL_PROVIDERS_PER_ORG } from '../src/runs/model-providers.service';
import { bearer, createOrg, createTestApp, TestApp, TestOrg } from './support/test-app';

/**
 * An organization's model providers are bounded (attack round 13 note: an admin key made as many as
 * its rate limit allowed), counted under the organization's lock so creations at once cannot pass
 * the bound together; another organization is not held to this one's.
 */
describe('model providers per organization (e2e)', () => {
  let t: TestApp;
  let ds: DataSource;
  let org: TestOrg;
  beforeAll(async () => {
    t = await createTestApp({});
    ds = t.app.get(DataSource);
    org = await createOrg(t);
  });
  afterAll(() => t.close());

  const create = (o: TestOrg, name: string) =>
    t.http
      .post('/api/v1/model-providers')
      .set(...bearer(o.keys.admin))
      .send({ name, kind: 'openai-compatible', baseUrl: 'http://127.0.0.1:45997/v1' });
  const count = async (orgId: string) => ((await ds.query(`SELECT count(*)::int AS n FROM model_provider WHERE org_id = $1`, [orgId])) as { n: number }[])[0].n;

  it(`holds ${MAX_MODEL_PROVIDERS_PER_ORG}: the next is 409 conflict, nothing made, whether asked one at a time or at once`, async () => {
    await ds.query(
      `INSERT INTO model_provider (org_id, name, kind, base_url) SELECT $1, 'prov-' || i, 'openai-compatible', 'http://127.0.0.1:45997/v1' FROM generate_series(1, $2::int) i`,
      [org.id, MAX_MODEL_PROVIDERS_PER_ORG - 2],
    );
    const answers = await Promise.all(['prov-a', 'prov-b', 'prov-c', 'prov-d'].map((name) => create(org, name)));
    expect(answers.map((r) => r.status).sort()).toEqual([201, 201, 409, 409]);
    expect(answers.find((r) => r.status === 409)!.body).toMatchObject({
      code: 'conflict',
      detail: expect.stringContaining(`${MAX_MODEL_PROVIDERS_PER_ORG} model providers`),
    });
    expect(await count(org.id)).toBe(MAX_MODEL_PROVIDERS_PER_ORG);

    const other = await createOrg(t);
    expect((await create(other, 'prov-a')).status).toBe(201);

    const made = answers.find((r) => r.status === 201)!.body as { id: string };
    await t.http
      .delete(`/api/v1/model-providers/${made.id}`)
      .set(...bearer(org.keys.admin))
      .expect(204);
    expect((await create(org, 'prov-e')).status).toBe(201);
    expect((await create(org, 'prov-f')).status).toBe(409);
  });
});
