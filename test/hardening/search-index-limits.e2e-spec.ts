import { bearer } from '../support/test-app';
import { countRows, hardeningWorld, HardeningWorld, isProblem } from '../support/hardening';

/**
 * Issue 13, class 5: limits the database has. A document under the 1 MiB content limit whose text
 * makes a search index (tsvector) over PostgreSQL's 1 MiB answered 500. It is refused whole with
 * 422 document_not_indexable (API docs say so), never stored unsearchable or half-indexed.
 */
function distinctWords(count: number, suffix = 'qz'): string {
  const words: string[] = [];
  for (let i = 0; i < count; i++) words.push(`${i.toString(36)}${suffix}`);
  return words.join(' ');
}

// Property runs make many requests; a loaded CI machine must not fail them on time alone.
jest.setTimeout(180_000);

describe('a document whose search index PostgreSQL cannot hold', () => {
  let h: HardeningWorld;
  beforeAll(async () => {
    h = await hardeningWorld();
  }, 180_000);
  afterAll(() => h.t.close());

  const cases = [
    { name: '120,000 distinct words (index over 1 MiB)', content: () => distinctWords(120_000).slice(0, 1_000_000), status: 422 },
    { name: '100,000 distinct longer words', content: () => distinctWords(100_000, 'abcdefgh').slice(0, 1_048_000), status: 422 },
    { name: '30,000 distinct words (fits)', content: () => distinctWords(30_000), status: 201 },
    { name: 'one word repeated to 1 MiB (fits: one lexeme)', content: () => 'refund '.repeat(149_000), status: 201 },
  ];

  it.each(cases.map((c, i) => [c.name, i] as const))('%s', async (_name, i) => {
    const c = cases[i];
    const before = await countRows(h.ds, 'knowledge_document');
    const res = await h.t.http
      .post(`/api/v1/knowledge/collections/${h.world.ids.collectionId}/documents`)
      .set(...bearer(h.world.org.keys.builder))
      .send({ title: c.name, content: c.content() });
    expect(res.status).toBe(c.status);
    if (c.status === 422) {
      expect(isProblem(res)).toBe(true);
      expect(res.body.code).toBe('document_not_indexable');
      expect(res.body.errors[0].path).toBe('content');
      expect(await countRows(h.ds, 'knowledge_document')).toBe(before);
    } else {
      expect(await countRows(h.ds, 'knowledge_document')).toBe(before + 1);
    }
  });

  it('is documented in the OpenAPI document of the route', async () => {
    const doc = await h.t.http.get('/api/docs-json').expect(200);
    const post = doc.body.paths['/api/v1/knowledge/collections/{id}/documents'].post;
    expect(post.responses['422'].description).toMatch(/document_not_indexable/);
  });
});
