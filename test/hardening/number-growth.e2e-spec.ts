import { DataSource } from 'typeorm';
import { MAX_NUMBER_GROWTH_CHARS, printedGrowth } from '../../src/common/json-numbers';
import { bearer, createOrg, createTestApp, TestApp, TestOrg } from '../support/test-app';

/**
 * Numbers PostgreSQL prints far longer than they were written. `jsonb` keeps each number as a
 * decimal with all its digits: a document whose metadata held 150,000 × `5e-324` (a 1 MiB body)
 * was stored in 40 KB and read back as 49 MB of JSON, 2 to 4 s a read; one viewer key's four reads
 * at once took another organization's reads from p50 8 ms to 545 ms (attack round 14, N-F3). A
 * body's numbers may now grow by at most MAX_NUMBER_GROWTH_CHARS (a body's size) once stored.
 */
describe('numbers stored far longer than written (e2e)', () => {
  let t: TestApp;
  let org: TestOrg;
  let ds: DataSource;
  let collection: string;

  beforeAll(async () => {
    t = await createTestApp();
    org = await createOrg(t);
    ds = t.app.get(DataSource);
    collection = (
      await t.http
        .post('/api/v1/knowledge/collections')
        .set(...bearer(org.keys.builder))
        .send({ name: 'Docs' })
        .expect(201)
    ).body.id;
  });
  afterAll(() => t.close());

  const upload = (count: number) =>
    t.http
      .post(`/api/v1/knowledge/collections/${collection}/documents`)
      .set(...bearer(org.keys.builder))
      .set('content-type', 'application/json')
      .send(`{"title":"t","content":"x","metadata":{"a":[${Array(count).fill('5e-324').join(',')}]}}`);
  const stored = async () => (await ds.query(`SELECT count(*)::int AS n FROM knowledge_document WHERE org_id = $1`, [org.id]))[0].n as number;

  it('refuses metadata of 140,000 tiny numbers at parse, nothing stored', async () => {
    const res = await upload(140_000).expect(400);
    expect(res.body.code).toBe('invalid_request');
    expect(res.body.errors[0]).toMatchObject({ code: 'numbers_too_long' });
    expect(res.body.errors[0].path).toMatch(/^metadata\.a\[\d+\]$/);
    expect(await stored()).toBe(0);
  });

  it('keeps a document whose numbers grow by less than a body, read back as PostgreSQL prints them', async () => {
    const count = Math.floor(MAX_NUMBER_GROWTH_CHARS / printedGrowth(5e-324));
    const res = await upload(count).expect(201);
    expect(res.body.metadata.a).toHaveLength(count);
    expect(res.body.metadata.a[0]).toBe(5e-324);
    const [{ bytes }] = await ds.query(`SELECT metadata_bytes AS bytes FROM knowledge_document WHERE org_id = $1`, [org.id]);
    // Stored text at most a body more than written (jsonb also spaces its commas).
    expect(Number(bytes)).toBeLessThan(MAX_NUMBER_GROWTH_CHARS + count * 9);
    expect(await stored()).toBe(1);
  });
});
