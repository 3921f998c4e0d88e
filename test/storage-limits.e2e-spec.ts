import { DataSource } from 'typeorm';
import { bearer, createOrg, createTestApp, TestApp, TestOrg } from './support/test-app';

/**
 * What one organization may store on the volume every organization writes to: documents' text by
 * bytes (KNOWLEDGE_MAX_BYTES_PER_ORG) and by count (KNOWLEDGE_MAX_DOCUMENTS_PER_ORG), collections
 * and skills by count (KNOWLEDGE_MAX_COLLECTIONS_PER_ORG, SKILLS_MAX_PER_ORG). Unbounded, one
 * builder key wrote a gigabyte a minute within its rate limit (attack round 6), 2.3 GB of
 * collections an hour, and empty documents of 540 bytes each counted as 3 (attack round 10).
 */
describe('storage limits per organization (e2e)', () => {
  let t: TestApp;
  let org: TestOrg;
  let other: TestOrg;

  beforeAll(async () => {
    t = await createTestApp({
      config: {
        storage: {
          knowledgeBytesPerOrg: 100,
          agentBytesPerOrg: 4000,
          runBytesPerOrg: 1e9,
          skillsPerOrg: 3,
          knowledgeCollectionsPerOrg: 3,
          knowledgeDocumentsPerOrg: 5,
        },
      },
    });
    org = await createOrg(t);
    other = await createOrg(t);
  });
  afterAll(() => t.close());

  const collection = async (o: TestOrg) =>
    (
      await t.http
        .post('/api/v1/knowledge/collections')
        .set(...bearer(o.keys.builder))
        .send({ name: 'Docs' })
        .expect(201)
    ).body.id as string;
  const addDocument = (o: TestOrg, id: string, content: string) =>
    t.http
      .post(`/api/v1/knowledge/collections/${id}/documents`)
      .set(...bearer(o.keys.builder))
      .send({ title: 't', content });
  const addSkill = (o: TestOrg, name: string) =>
    t.http
      .post('/api/v1/skills')
      .set(...bearer(o.keys.builder))
      .send({ name, description: 'd', instructions: 'i' });

  it("refuses a document past the organization's bytes of text, whole, and takes it again once space is freed", async () => {
    const docs = await collection(org);
    // 39 characters of 2 bytes each and a one-byte title, `{}` of metadata: 81 bytes, as PostgreSQL counts them
    // (signs, not words: nothing for the search index to weigh; a stop word for a title).
    const first = await addDocument(org, docs, '§'.repeat(39)).expect(201);
    const refused = await addDocument(org, docs, '.'.repeat(17)).expect(409);
    expect(refused.body).toMatchObject({ code: 'conflict', detail: expect.stringContaining('holds 81 bytes (documents') });
    // Metadata counts as the text does: counted by text alone, a megabyte of it a document passed the limit 94 times.
    await t.http
      .post(`/api/v1/knowledge/collections/${docs}/documents`)
      .set(...bearer(org.keys.builder))
      .send({ title: 't', content: '', metadata: { blob: '.'.repeat(20) } })
      .expect(409);
    // Exactly up to the limit is taken (16 + 1 + 2); nothing of the refused ones was stored.
    await addDocument(org, docs, '.'.repeat(16)).expect(201);
    const listed = await t.http
      .get(`/api/v1/knowledge/collections/${docs}/documents`)
      .set(...bearer(org.keys.viewer))
      .expect(200);
    expect(listed.body.items).toHaveLength(2);
    // Another organization's limit is its own.
    await addDocument(other, await collection(other), '-'.repeat(97)).expect(201);
    await t.http
      .delete(`/api/v1/knowledge/collections/${docs}/documents/${first.body.id}`)
      .set(...bearer(org.keys.builder))
      .expect(204);
    await addDocument(org, docs, ':'.repeat(78)).expect(201);
  });

  it('refuses documents added at once past the limit together, counting each', async () => {
    const o = await createOrg(t);
    const docs = await collection(o);
    const answers = await Promise.all(Array.from({ length: 8 }, () => addDocument(o, docs, '.'.repeat(27))));
    expect(answers.map((a) => a.status).sort()).toEqual([201, 201, 201, 409, 409, 409, 409, 409]);
  });

  it("frees a deleted collection's documents at once, and keeps the stored total equal to what the documents weigh", async () => {
    const o = await createOrg(t);
    const [a, b] = [await collection(o), await collection(o)];
    for (const content of ['.'.repeat(20), '§'.repeat(10), '-'.repeat(15)]) await addDocument(o, a, content).expect(201);
    await addDocument(o, b, ':'.repeat(30)).expect(201);
    await addDocument(o, b, '~'.repeat(40)).expect(409);
    // Its documents go with the collection (one cascaded statement); their bytes are free again.
    await t.http
      .delete(`/api/v1/knowledge/collections/${a}`)
      .set(...bearer(o.keys.builder))
      .expect(204);
    await addDocument(o, b, '~'.repeat(40)).expect(201);
    const ds = t.app.get(DataSource);
    const [{ counted, weighed }]: { counted: string; weighed: string }[] = await ds.query(
      `SELECT (SELECT bytes FROM knowledge_usage WHERE org_id = $1)::text AS counted,
              (SELECT sum(octet_length(content) + octet_length(title) + metadata_bytes + 64 * length(search)) FROM knowledge_document WHERE org_id = $1)::text AS weighed`,
      [o.id],
    );
    expect(Number(counted)).toBe(33 + 43);
    expect(counted).toBe(weighed);
  });

  it("weighs the words of a document's search index too: 64 bytes each and three times their own, whole or refused, and the same going as coming", async () => {
    // Short distinct words: the search vector and its index entries took about ten times the text
    // (attack round 14, N-F4), and a long word more (attack round 21, AC-F1: test/search-word-bytes.e2e-spec.ts).
    // One word, and the title's stop word: 5 + 1 + 2 bytes, and 64 and 3 × 5 for the word.
    const o = await createOrg(t);
    const docs = await collection(o);
    await addDocument(o, docs, 'alpha').expect(201);
    const used = async () =>
      (
        await t.http
          .get(`/api/v1/orgs/${o.id}/usage`)
          .set(...bearer(o.keys.admin))
          .expect(200)
      ).body.items.find((i: { meter: string }) => i.meter === 'knowledge').used as number;
    expect(await used()).toBe(5 + 1 + 2 + 64 + 15);
    // Another word: its 7 bytes of text would fit under 100, its word does not. Refused whole, nothing stored.
    const refused = await addDocument(o, docs, 'beta').expect(409);
    expect(refused.body).toMatchObject({ code: 'conflict', detail: expect.stringContaining('holds 87 bytes') });
    expect(await used()).toBe(87);
    // Signs are no words: the text that fits is taken.
    await addDocument(o, docs, '.'.repeat(10)).expect(201);
    const listed = await t.http
      .get(`/api/v1/knowledge/collections/${docs}/documents`)
      .set(...bearer(o.keys.viewer))
      .expect(200);
    expect(listed.body.items).toHaveLength(2);
    for (const d of listed.body.items)
      await t.http
        .delete(`/api/v1/knowledge/collections/${docs}/documents/${d.id}`)
        .set(...bearer(o.keys.builder))
        .expect(204);
    expect(await used()).toBe(0);
  });

  it("refuses a draft or a version past the organization's bytes of agents, whole; a shorter draft is taken, and the kept total is what the rows weigh", async () => {
    const o = await createOrg(t);
    const as = bearer(o.keys.builder);
    const agent = (
      await t.http
        .post('/api/v1/agents')
        .set(...as)
        .send({ slug: 'heavy-agent', name: 'A' })
        .expect(201)
    ).body.id as string;
    const draft = (n: number) =>
      t.http
        .put(`/api/v1/agents/${agent}/draft`)
        .set(...as)
        .send({ instructions: 'x'.repeat(n), capabilities: [] });
    await draft(1500).expect(200);
    const refused = await draft(4500).expect(409);
    expect(refused.body).toMatchObject({ code: 'conflict', detail: expect.stringContaining('AGENTS_MAX_BYTES_PER_ORG') });
    expect(
      (
        await t.http
          .get(`/api/v1/agents/${agent}`)
          .set(...as)
          .expect(200)
      ).body.draft.instructions,
    ).toHaveLength(1500);
    // A version of 1,500 characters more passes the limit: not published, no version kept.
    await draft(2500).expect(200);
    expect(
      (
        await t.http
          .post(`/api/v1/agents/${agent}/publish`)
          .set(...as)
          .expect(409)
      ).body.code,
    ).toBe('conflict');
    expect(
      (
        await t.http
          .get(`/api/v1/agents/${agent}`)
          .set(...as)
          .expect(200)
      ).body.latestVersion,
    ).toBeNull();
    await draft(1000).expect(200);
    expect(
      (
        await t.http
          .post(`/api/v1/agents/${agent}/publish`)
          .set(...as)
          .expect(201)
      ).body.version,
    ).toBe(1);
    // Another organization's limit is its own.
    const theirs = (
      await t.http
        .post('/api/v1/agents')
        .set(...bearer(other.keys.builder))
        .send({ slug: 'their-agent', name: 'B' })
        .expect(201)
    ).body.id;
    await t.http
      .put(`/api/v1/agents/${theirs}/draft`)
      .set(...bearer(other.keys.builder))
      .send({ instructions: 'y'.repeat(3400), capabilities: [] })
      .expect(200);
    const [{ counted, weighed }]: { counted: string; weighed: string }[] = await t.app.get(DataSource).query(
      `SELECT (SELECT bytes FROM agent_usage WHERE org_id = $1)::text AS counted,
              ((SELECT sum(512 + draft_bytes + coalesce(octet_length(description), 0)) FROM agent WHERE org_id = $1)
               + (SELECT sum(512 + spec_bytes + tool_digests_bytes) FROM agent_version WHERE org_id = $1))::text AS weighed`,
      [o.id],
    );
    expect(counted).toBe(weighed);
  });

  it('counts each agent as a row too: agents with nearly empty drafts fill the bound (attack round 10, E-F9)', async () => {
    const o = await createOrg(t);
    const statuses: number[] = [];
    for (let i = 0; i < 10; i++) {
      statuses.push(
        (
          await t.http
            .post('/api/v1/agents')
            .set(...bearer(o.keys.builder))
            .send({ slug: `tiny-${i}`, name: 'T' })
        ).status,
      );
    }
    // 512 bytes a row and the empty draft's few dozen: seven fit in 4,000 bytes, counted as text alone all ten did.
    expect(statuses).toEqual([201, 201, 201, 201, 201, 201, 201, 409, 409, 409]);
  });

  it("refuses a skill past the organization's count, also when asked for at once", async () => {
    const o = await createOrg(t);
    const answers = await Promise.all(Array.from({ length: 6 }, (_, i) => addSkill(o, `s${i}`)));
    expect(answers.map((a) => a.status).sort()).toEqual([201, 201, 201, 409, 409, 409]);
    expect(answers.find((a) => a.status === 409)!.body).toMatchObject({ code: 'conflict', detail: expect.stringContaining('at most 3 skills') });
    await addSkill(other, 'theirs').expect(201);
  });

  it("tells the organization's admin what it holds of each bound, and nobody else", async () => {
    const o = await createOrg(t);
    // 10 bytes of text (no word), a one-byte title and `{}` of metadata.
    await addDocument(o, await collection(o), '.'.repeat(10)).expect(201);
    await addSkill(o, 'one').expect(201);
    const usage = await t.http
      .get(`/api/v1/orgs/${o.id}/usage`)
      .set(...bearer(o.keys.admin))
      .expect(200);
    expect(usage.body.items).toEqual([
      { meter: 'knowledge', unit: 'bytes', used: 13, limit: 100, setting: 'KNOWLEDGE_MAX_BYTES_PER_ORG' },
      { meter: 'collections', unit: 'items', used: 1, limit: 3, setting: 'KNOWLEDGE_MAX_COLLECTIONS_PER_ORG' },
      { meter: 'documents', unit: 'items', used: 1, limit: 5, setting: 'KNOWLEDGE_MAX_DOCUMENTS_PER_ORG' },
      { meter: 'agents', unit: 'bytes', used: 0, limit: 4000, setting: 'AGENTS_MAX_BYTES_PER_ORG' },
      { meter: 'runs', unit: 'bytes', used: 0, limit: 1e9, setting: 'RUNS_MAX_BYTES_PER_ORG' },
      { meter: 'skills', unit: 'items', used: 1, limit: 3, setting: 'SKILLS_MAX_PER_ORG' },
      // The five keys of the roles the test made.
      { meter: 'api_keys', unit: 'items', used: 5, limit: 1000, setting: 'fixed' },
      { meter: 'memories', unit: 'bytes', used: 0, limit: 1024 ** 3, setting: 'MEMORY_MAX_BYTES_PER_ORG' },
    ]);
    await t.http
      .get(`/api/v1/orgs/${o.id}/usage`)
      .set(...bearer(other.keys.admin))
      .expect(404);
    await t.http
      .get(`/api/v1/orgs/${o.id}/usage`)
      .set(...bearer(o.keys.viewer))
      .expect(403);
  });

  it("refuses a collection past the organization's count, also when asked for at once; a deleted one makes room", async () => {
    const o = await createOrg(t);
    const create = () =>
      t.http
        .post('/api/v1/knowledge/collections')
        .set(...bearer(o.keys.builder))
        .send({ name: 'Docs' });
    const answers = await Promise.all(Array.from({ length: 6 }, create));
    expect(answers.map((a) => a.status).sort()).toEqual([201, 201, 201, 409, 409, 409]);
    expect(answers.find((a) => a.status === 409)!.body).toMatchObject({
      code: 'conflict',
      detail: expect.stringContaining('at most 3 knowledge collections (KNOWLEDGE_MAX_COLLECTIONS_PER_ORG)'),
    });
    const listed = await t.http
      .get('/api/v1/knowledge/collections')
      .set(...bearer(o.keys.viewer))
      .expect(200);
    expect(listed.body.items).toHaveLength(3);
    // Another organization's count is its own.
    await collection(await createOrg(t));
    await t.http
      .delete(`/api/v1/knowledge/collections/${answers.find((a) => a.status === 201)!.body.id}`)
      .set(...bearer(o.keys.builder))
      .expect(204);
    await create().expect(201);
  });

  it("refuses a document past the organization's count however little it weighs, and keeps the count equal to the documents", async () => {
    const o = await createOrg(t);
    const [a, b] = [await collection(o), await collection(o)];
    // Empty documents: 3 bytes each of the 100, yet rows of their own.
    const answers = await Promise.all(Array.from({ length: 4 }, () => addDocument(o, a, '')));
    expect(answers.map((r) => r.status)).toEqual([201, 201, 201, 201]);
    await addDocument(o, b, '').expect(201);
    const refused = await addDocument(o, b, '').expect(409);
    expect(refused.body).toMatchObject({
      code: 'conflict',
      detail: expect.stringContaining('at most 5 knowledge documents (KNOWLEDGE_MAX_DOCUMENTS_PER_ORG)'),
    });
    // Another organization's count is its own.
    const p = await createOrg(t);
    await addDocument(p, await collection(p), '').expect(201);
    // A deleted collection's documents free their places at once (one cascaded statement).
    await t.http
      .delete(`/api/v1/knowledge/collections/${a}`)
      .set(...bearer(o.keys.builder))
      .expect(204);
    for (let i = 0; i < 4; i++) await addDocument(o, b, '').expect(201);
    await addDocument(o, b, '').expect(409);
    const [{ counted, stored }]: { counted: string; stored: string }[] = await t.app
      .get(DataSource)
      .query(
        `SELECT (SELECT documents FROM knowledge_usage WHERE org_id = $1)::text AS counted, (SELECT count(*) FROM knowledge_document WHERE org_id = $1)::text AS stored`,
        [o.id],
      );
    expect([counted, stored]).toEqual(['5', '5']);
  });
});
