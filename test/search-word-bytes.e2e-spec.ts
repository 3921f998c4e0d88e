import { randomBytes } from 'node:crypto';
import { DataSource } from 'typeorm';
import { addDocument, createAgent, createCollection, memoryTools } from './support/builtins';
import { bearer, createOrg, createTestApp, TestApp, TestOrg } from './support/test-app';

/**
 * Attack round 21, AC-F1: a word of a search index was weighed 64 bytes whatever its length, what
 * a short word takes. A word is kept up to 2,047 bytes, once in the row's vector and once as its
 * GIN key, so long distinct words took three to four times what the bound counted: 100,000
 * memories of one 1,984-letter word counted 256 MB and took 835 MB; 40 documents of 500 such words
 * counted 41 MB and took 172 MB (PostgreSQL 15). A word now weighs 64 bytes and three times its own
 * bytes (migration 1765100000000). Here, what the organization's rows add to the tables and their
 * indexes (the GIN pending lists flushed) is compared with what the bound counts of them.
 */
describe("long words of a search index, weighed against the organization's bounds (e2e, attack round 21 AC-F1)", () => {
  let t: TestApp;
  let ds: DataSource;

  beforeAll(async () => {
    t = await createTestApp();
    ds = t.app.get(DataSource);
  });
  afterAll(() => t.close());

  /** One word of `n` letters nobody else writes (the parser keeps words up to 2,047 bytes). */
  const longWord = (n = 1984) =>
    [...randomBytes(n)]
      .map((b) => String.fromCharCode(97 + (b % 26)))
      .join('')
      .slice(0, n);
  /** What a table takes with its TOAST and indexes, once its GIN index's pending entries are in the index proper. */
  const taken = async (table: string, gin: string) => {
    await ds.query(`SELECT gin_clean_pending_list($1::regclass)`, [gin]);
    return Number((await ds.query(`SELECT pg_total_relation_size($1::regclass)::text AS b`, [table]))[0].b);
  };
  const usage = async (org: TestOrg, meter: 'knowledge' | 'memories') =>
    (
      await t.http
        .get(`/api/v1/orgs/${org.id}/usage`)
        .set(...bearer(org.keys.admin))
        .expect(200)
    ).body.items.find((i: { meter: string }) => i.meter === meter).used as number;

  it('counts what documents of long distinct words take, and nothing once they are deleted', async () => {
    const org = await createOrg(t);
    const docs = await createCollection(t, org, 'Long words');
    const before = await taken('knowledge_document', 'knowledge_document_search_idx');
    const ids: string[] = [];
    for (let i = 0; i < 4; i++) {
      ids.push(await addDocument(t, org, docs, `doc ${i}`, Array.from({ length: 500 }, () => longWord()).join(' ')));
    }
    const grown = (await taken('knowledge_document', 'knowledge_document_search_idx')) - before;
    const counted = await usage(org, 'knowledge');
    // Before: 4.1 MB counted of about 17 MB taken (0.24).
    expect(grown).toBeGreaterThan(4 * 500 * 1984);
    expect(counted / grown).toBeGreaterThan(0.75);
    for (const id of ids)
      await t.http
        .delete(`/api/v1/knowledge/collections/${docs}/documents/${id}`)
        .set(...bearer(org.keys.builder))
        .expect(204);
    expect(await usage(org, 'knowledge')).toBe(0);
  });

  it('counts what memories of one long word take, and nothing once they are forgotten', async () => {
    const org = await createOrg(t, ['memory:read', 'memory:write']);
    const tools = await memoryTools(t, org, await createAgent(t, org));
    const before = await taken('agent_memory', 'agent_memory_search_idx');
    const ids: string[] = [];
    for (let i = 0; i < 200; i++) ids.push((await tools.remember(longWord())).memoryId);
    const grown = (await taken('agent_memory', 'agent_memory_search_idx')) - before;
    const counted = await usage(org, 'memories');
    // Before: 512 KB counted of about 1.7 MB taken (0.3).
    expect(grown).toBeGreaterThan(200 * 2 * 1984);
    expect(counted / grown).toBeGreaterThan(0.75);
    for (const id of ids) await tools.forget(id);
    expect(await usage(org, 'memories')).toBe(0);
  });

  it("reads a vector's word bytes from its stripped form as the sum of its words' bytes", async () => {
    const texts = ['', 'the', 'alpha', 'x-y-z refunds émigré 😀 naïve', `${longWord(2047)} ${longWord(30)}`, 'a b c '.repeat(500)];
    for (const text of texts) {
      const [row]: { fast: string; summed: string }[] = await ds.query(
        `SELECT search_word_bytes(v)::text AS fast, coalesce((SELECT sum(octet_length(w)) FROM unnest(tsvector_to_array(v)) AS w), 0)::text AS summed
           FROM to_tsvector('english'::regconfig, $1) AS v`,
        [text],
      );
      expect(row.fast).toBe(row.summed);
    }
  });
});
