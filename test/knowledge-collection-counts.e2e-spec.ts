import { DataSource } from 'typeorm';
import { bearer, createOrg, createTestApp, TestApp, TestOrg } from './support/test-app';

/**
 * A collection's `documentCount` is kept on its row by the database (migration 1764523220000).
 * Counted on every read, a page of collections at an organization's million documents took 100 ms
 * of the database, and ten pages at once from one viewer key held the pool: another
 * organization's reads went from 5 ms to 286 ms (attack round 10, E-F3).
 */
describe('knowledge collection counts (e2e)', () => {
  let t: TestApp;
  let org: TestOrg;
  let ds: DataSource;

  beforeAll(async () => {
    t = await createTestApp();
    org = await createOrg(t);
    ds = t.app.get(DataSource);
  });
  afterAll(() => t.close());

  const collection = async () =>
    (
      await t.http
        .post('/api/v1/knowledge/collections')
        .set(...bearer(org.keys.builder))
        .send({ name: 'Docs' })
        .expect(201)
    ).body.id as string;
  const addDocument = async (id: string) =>
    (
      await t.http
        .post(`/api/v1/knowledge/collections/${id}/documents`)
        .set(...bearer(org.keys.builder))
        .send({ title: 't', content: 'some text' })
        .expect(201)
    ).body.id as string;
  const counts = async () => {
    const listed = await t.http
      .get('/api/v1/knowledge/collections')
      .set(...bearer(org.keys.viewer))
      .expect(200);
    return Object.fromEntries((listed.body.items as { id: string; documentCount: number }[]).map((c) => [c.id, c.documentCount]));
  };

  it('reads collections without reading their documents', async () => {
    const id = await collection();
    await addDocument(id);
    const query = jest.spyOn(ds, 'query');
    try {
      await t.http
        .get('/api/v1/knowledge/collections')
        .set(...bearer(org.keys.viewer))
        .expect(200);
      const one = await t.http
        .get(`/api/v1/knowledge/collections/${id}`)
        .set(...bearer(org.keys.viewer))
        .expect(200);
      expect(one.body.documentCount).toBe(1);
      const statements = query.mock.calls.map(([sql]) => String(sql));
      expect(statements.some((sql) => sql.includes('knowledge_collection'))).toBe(true);
      expect(statements.filter((sql) => sql.includes('knowledge_document'))).toEqual([]);
    } finally {
      query.mockRestore();
    }
  });

  it('keeps every count equal to the documents through inserts, deletions, bulk statements and a deleted collection', async () => {
    const [a, b, c] = [await collection(), await collection(), await collection()];
    const docs = await Promise.all([addDocument(a), addDocument(a), addDocument(a), addDocument(b)]);
    await t.http
      .delete(`/api/v1/knowledge/collections/${a}/documents/${docs[0]}`)
      .set(...bearer(org.keys.builder))
      .expect(204);
    // Statements of many rows (by hand, as an operator might) count each row once.
    await ds.query(
      `INSERT INTO knowledge_document (id, org_id, collection_id, title, content)
       SELECT gen_random_uuid(), $1, x.collection_id, 't', '' FROM unnest($2::uuid[]) AS x(collection_id)`,
      [org.id, [b, b, c, c, c]],
    );
    await ds.query(`UPDATE knowledge_document SET collection_id = $3 WHERE org_id = $1 AND id = $2`, [org.id, docs[1], c]);
    expect(await counts()).toMatchObject({ [a]: 1, [b]: 3, [c]: 4 });
    await t.http
      .delete(`/api/v1/knowledge/collections/${c}`)
      .set(...bearer(org.keys.builder))
      .expect(204);
    const rows: { id: string; kept: string; counted: string }[] = await ds.query(
      `SELECT c.id, c.document_count::text AS kept, (SELECT count(*) FROM knowledge_document d WHERE d.collection_id = c.id)::text AS counted
         FROM knowledge_collection c WHERE c.org_id = $1`,
      [org.id],
    );
    expect(rows.length).toBeGreaterThan(2);
    for (const r of rows) expect(r.kept).toBe(r.counted);
    expect(await counts()).toMatchObject({ [a]: 1, [b]: 3 });
  });
});
