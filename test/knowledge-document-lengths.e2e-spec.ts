import { DataSource } from 'typeorm';
import { bearer, createOrg, createTestApp, TestApp, TestOrg } from './support/test-app';

/**
 * A document's length in characters is stored when it is written (`content_chars`, migration
 * 1764700000000). Measured per read with `length(content)`, a list of 200 documents of a megabyte
 * read and decompressed all 200 MB of their text for 38 KB of answer (0.5 to 0.8 s a page), and
 * one viewer key's ten pages at once took another organization's reads from p50 11 ms to 516 ms
 * (attack round 14, N-F1).
 */
describe('knowledge document lengths (e2e)', () => {
  let t: TestApp;
  let org: TestOrg;
  let ds: DataSource;

  beforeAll(async () => {
    t = await createTestApp();
    org = await createOrg(t);
    ds = t.app.get(DataSource);
  });
  afterAll(() => t.close());

  // Two-byte, three-byte and four-byte characters (one character each, two UTF-16 units for the last).
  const content = 'héllo 世界 😀 '.repeat(1000);
  const chars = Array.from(content).length;

  it('lists and reads documents without reading their text for its length, counted in characters', async () => {
    const { body: collection } = await t.http
      .post('/api/v1/knowledge/collections')
      .set(...bearer(org.keys.builder))
      .send({ name: 'Docs' })
      .expect(201);
    const created = await t.http
      .post(`/api/v1/knowledge/collections/${collection.id}/documents`)
      .set(...bearer(org.keys.builder))
      .send({ title: 't', content })
      .expect(201);
    expect(created.body.contentLength).toBe(chars);
    expect(chars).toBeLessThan(content.length);

    const query = jest.spyOn(ds, 'query');
    try {
      const listed = await t.http
        .get(`/api/v1/knowledge/collections/${collection.id}/documents`)
        .set(...bearer(org.keys.viewer))
        .expect(200);
      expect(listed.body.items.map((d: { contentLength: number }) => d.contentLength)).toEqual([chars]);
      const statements = query.mock.calls.map(([sql]) => String(sql)).filter((sql) => sql.includes('knowledge_document'));
      expect(statements.length).toBeGreaterThan(0);
      // The text's column is not named at all: its length comes from the stored count.
      for (const sql of statements) expect(sql).not.toMatch(/\bcontent\b/);
    } finally {
      query.mockRestore();
    }

    const read = await t.http
      .get(`/api/v1/knowledge/collections/${collection.id}/documents/${created.body.id}`)
      .set(...bearer(org.keys.viewer))
      .expect(200);
    expect(read.body.contentLength).toBe(chars);
    expect(read.body.content).toBe(content);
  });

  it('keeps the stored length equal to the text, whoever writes the row', async () => {
    const [{ id: collectionId }]: { id: string }[] = await ds.query(
      `INSERT INTO knowledge_collection (id, org_id, name) VALUES (gen_random_uuid(), $1, 'by hand') RETURNING id`,
      [org.id],
    );
    await ds.query(`INSERT INTO knowledge_document (id, org_id, collection_id, title, content) VALUES (gen_random_uuid(), $1, $2, 't', $3)`, [
      org.id,
      collectionId,
      content,
    ]);
    const [row]: { content_chars: number; chars: number }[] = await ds.query(
      `SELECT content_chars, length(content) AS chars FROM knowledge_document WHERE org_id = $1 AND collection_id = $2`,
      [org.id, collectionId],
    );
    expect(Number(row.content_chars)).toBe(chars);
    expect(Number(row.chars)).toBe(chars);
  });
});
