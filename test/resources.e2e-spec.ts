import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { bearer, createOrg, createTestApp, TestApp, TestOrg } from './support/test-app';

describe('resources: knowledge collections, documents and skills (e2e)', () => {
  let t: TestApp;
  let org: TestOrg;
  let other: TestOrg;
  beforeAll(async () => {
    t = await createTestApp();
    org = await createOrg(t);
    other = await createOrg(t);
  });
  afterAll(() => t.close());

  const as = (o: TestOrg, role: keyof TestOrg['keys']) => bearer(o.keys[role]);

  it('creates, lists, reads and deletes collections and their documents', async () => {
    const created = await t.http
      .post('/api/v1/knowledge/collections')
      .set(...as(org, 'builder'))
      .send({ name: 'Handbook', description: 'How we work' })
      .expect(201);
    expect(created.body).toEqual({
      id: expect.any(String),
      name: 'Handbook',
      description: 'How we work',
      documentCount: 0,
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
    });
    const id = created.body.id;
    const doc = await t.http
      .post(`/api/v1/knowledge/collections/${id}/documents`)
      .set(...as(org, 'builder'))
      .send({ title: 'Refunds', content: 'Customers may return goods within 30 days.', metadata: { lang: 'en', tags: ['policy'] } })
      .expect(201);
    expect(doc.body).toEqual({
      id: expect.any(String),
      collectionId: id,
      title: 'Refunds',
      content: 'Customers may return goods within 30 days.',
      contentLength: 42,
      metadata: { lang: 'en', tags: ['policy'] },
      createdAt: expect.any(String),
    });
    await t.http
      .post(`/api/v1/knowledge/collections/${id}/documents`)
      .set(...as(org, 'builder'))
      .send({ title: 'Shipping', content: 'We ship worldwide.' })
      .expect(201);

    const list = await t.http
      .get(`/api/v1/knowledge/collections/${id}/documents?limit=1`)
      .set(...as(org, 'viewer'))
      .expect(200);
    expect(list.body.items).toHaveLength(1);
    expect(list.body.items[0]).not.toHaveProperty('content');
    const rest = await t.http
      .get(`/api/v1/knowledge/collections/${id}/documents?cursor=${list.body.nextCursor}`)
      .set(...as(org, 'viewer'))
      .expect(200);
    expect(rest.body.nextCursor).toBeNull();
    expect([...list.body.items, ...rest.body.items].map((d: { title: string }) => d.title).sort()).toEqual(['Refunds', 'Shipping']);

    const read = await t.http
      .get(`/api/v1/knowledge/collections/${id}`)
      .set(...as(org, 'viewer'))
      .expect(200);
    expect(read.body.documentCount).toBe(2);
    const readDoc = await t.http
      .get(`/api/v1/knowledge/collections/${id}/documents/${doc.body.id}`)
      .set(...as(org, 'viewer'))
      .expect(200);
    expect(readDoc.body.content).toBe('Customers may return goods within 30 days.');

    const collections = await t.http
      .get('/api/v1/knowledge/collections')
      .set(...as(org, 'viewer'))
      .expect(200);
    expect(collections.body.items.map((c: { id: string }) => c.id)).toContain(id);

    await t.http
      .delete(`/api/v1/knowledge/collections/${id}/documents/${doc.body.id}`)
      .set(...as(org, 'builder'))
      .expect(204);
    await t.http
      .get(`/api/v1/knowledge/collections/${id}/documents/${doc.body.id}`)
      .set(...as(org, 'viewer'))
      .expect(404);
    await t.http
      .delete(`/api/v1/knowledge/collections/${id}`)
      .set(...as(org, 'builder'))
      .expect(204);
    await t.http
      .get(`/api/v1/knowledge/collections/${id}`)
      .set(...as(org, 'viewer'))
      .expect(404);
    await t.http
      .get(`/api/v1/knowledge/collections/${id}/documents`)
      .set(...as(org, 'viewer'))
      .expect(404);
  });

  it('indexes document text for Postgres full-text search', async () => {
    const c = await t.http
      .post('/api/v1/knowledge/collections')
      .set(...as(org, 'builder'))
      .send({ name: 'Search me' })
      .expect(201);
    await t.http
      .post(`/api/v1/knowledge/collections/${c.body.id}/documents`)
      .set(...as(org, 'builder'))
      .send({ title: 'Running shoes', content: 'Our runners love the cushioned soles.' })
      .expect(201);
    await t.http
      .post(`/api/v1/knowledge/collections/${c.body.id}/documents`)
      .set(...as(org, 'builder'))
      .send({ title: 'Tea', content: 'Green and black.' })
      .expect(201);
    const ds = t.app.get(DataSource);
    const hits: { title: string }[] = await ds.query(
      `SELECT title FROM knowledge_document WHERE org_id = $1 AND collection_id = $2 AND search @@ websearch_to_tsquery('english', $3)`,
      [org.id, c.body.id, 'run'],
    );
    expect(hits.map((h) => h.title)).toEqual(['Running shoes']);
    const indexes: { indexdef: string }[] = await ds.query(`SELECT indexdef FROM pg_indexes WHERE tablename = 'knowledge_document' AND indexdef ILIKE '%gin%'`);
    expect(indexes).toHaveLength(1);
  });

  it('validates bodies strictly', async () => {
    const bad = await t.http
      .post('/api/v1/knowledge/collections')
      .set(...as(org, 'builder'))
      .send({ name: '', extra: 1 })
      .expect(400);
    expect(bad.body.code).toBe('invalid_request');
    expect(pathsOf(bad.body)).toEqual(['extra', 'name']);
    const c = await t.http
      .post('/api/v1/knowledge/collections')
      .set(...as(org, 'builder'))
      .send({ name: 'x' })
      .expect(201);
    const badDoc = await t.http
      .post(`/api/v1/knowledge/collections/${c.body.id}/documents`)
      .set(...as(org, 'builder'))
      .send({ title: 'x', content: 5, metadata: [1] })
      .expect(400);
    expect(pathsOf(badDoc.body)).toEqual(['content', 'metadata']);
    // null is not an object: it was stored as {} without a word.
    const nullMetadata = await t.http
      .post(`/api/v1/knowledge/collections/${c.body.id}/documents`)
      .set(...as(org, 'builder'))
      .send({ title: 'x', content: 'y', metadata: null })
      .expect(400);
    expect(nullMetadata.body.errors).toEqual([expect.objectContaining({ path: 'metadata', code: 'isObject' })]);
    const listed = await t.http
      .get(`/api/v1/knowledge/collections/${c.body.id}/documents`)
      .set(...as(org, 'builder'))
      .expect(200);
    expect(listed.body.items).toEqual([]);
    const badSkill = await t.http
      .post('/api/v1/skills')
      .set(...as(org, 'builder'))
      .send({ name: 'x' })
      .expect(400);
    expect(pathsOf(badSkill.body)).toEqual(['description', 'instructions']);
  });

  it('accepts a document of nearly 1 MiB and answers 413 past the body limit', async () => {
    const c = await t.http
      .post('/api/v1/knowledge/collections')
      .set(...as(org, 'builder'))
      .send({ name: 'big' })
      .expect(201);
    // The content's own limit (1 MiB of characters) is never the first to bite: a body carrying
    // more characters than that is over the 1 MiB body limit already.
    const nearly = await t.http
      .post(`/api/v1/knowledge/collections/${c.body.id}/documents`)
      .set(...as(org, 'builder'))
      .send({ title: 'big', content: 'a'.repeat(1024 * 1024 - 64) })
      .expect(201);
    expect(nearly.body.contentLength).toBe(1024 * 1024 - 64);
    const over = await t.http
      .post(`/api/v1/knowledge/collections/${c.body.id}/documents`)
      .set(...as(org, 'builder'))
      .send({ title: 'big', content: 'a'.repeat(1024 * 1024 + 1) })
      .expect(413);
    expect(over.body.code).toBe('payload_too_large');
  });

  it('creates, lists, reads and deletes skills', async () => {
    const s = await t.http
      .post('/api/v1/skills')
      .set(...as(org, 'builder'))
      .send({ name: 'Triage', description: 'Sort tickets', instructions: '1. Read.\n2. Sort.' })
      .expect(201);
    expect(s.body).toEqual({
      id: expect.any(String),
      name: 'Triage',
      description: 'Sort tickets',
      instructions: '1. Read.\n2. Sort.',
      createdAt: expect.any(String),
    });
    await t.http
      .get(`/api/v1/skills/${s.body.id}`)
      .set(...as(org, 'viewer'))
      .expect(200);
    const list = await t.http
      .get('/api/v1/skills')
      .set(...as(org, 'viewer'))
      .expect(200);
    expect(list.body.items.map((x: { id: string }) => x.id)).toContain(s.body.id);
    expect(list.body.nextCursor).toBeNull();
    await t.http
      .delete(`/api/v1/skills/${s.body.id}`)
      .set(...as(org, 'builder'))
      .expect(204);
    await t.http
      .get(`/api/v1/skills/${s.body.id}`)
      .set(...as(org, 'viewer'))
      .expect(404);
    await t.http
      .delete(`/api/v1/skills/${s.body.id}`)
      .set(...as(org, 'builder'))
      .expect(404);
  });

  it('lists skills without their instructions with view=basic, a page of them as many as asked, paged as the full list', async () => {
    const scope = await createOrg(t);
    const long = `# Steps\n${'Ask, then answer. é🙂 '.repeat(4_700)}`; // 98,700 UTF-16 units, more UTF-8 bytes
    const made: string[] = [];
    for (let i = 0; i < 45; i++) {
      const res = await t.http
        .post('/api/v1/skills')
        .set(...as(scope, 'builder'))
        .send({ name: `Skill ${i}`, description: `Does ${i}`, instructions: long })
        .expect(201);
      made.unshift(res.body.id);
    }
    // The full list ends a page at its byte budget (about 4 MiB): fewer than asked, the instructions whole.
    const full = await t.http
      .get('/api/v1/skills?limit=200')
      .set(...as(scope, 'viewer'))
      .expect(200);
    expect(full.body.items.length).toBeLessThan(45);
    expect(full.body.items[0].instructions).toBe(long);
    // Basic: every skill on one page, no instructions, their length in characters.
    const basic = await t.http
      .get('/api/v1/skills?limit=200&view=basic')
      .set(...as(scope, 'viewer'))
      .expect(200);
    expect(basic.body.nextCursor).toBeNull();
    expect(basic.body.items.map((x: { id: string }) => x.id)).toEqual(made);
    expect(basic.body.items[0]).toEqual({
      id: made[0],
      name: 'Skill 44',
      description: 'Does 44',
      instructionsLength: [...long].length,
      createdAt: full.body.items[0].createdAt,
    });
    expect(JSON.stringify(basic.body).length).toBeLessThan(10_000);
    // Paged the same way, every skill once.
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page: { body: { items: { id: string }[]; nextCursor: string | null } } = await t.http
        .get(`/api/v1/skills?view=basic&limit=20${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`)
        .set(...as(scope, 'viewer'))
        .expect(200);
      seen.push(...page.body.items.map((x: { id: string }) => x.id));
      cursor = page.body.nextCursor;
    } while (cursor);
    expect(seen).toEqual(made);
    // Another organization's skills are not listed; an unknown view is refused naming the field.
    const others = await t.http
      .get('/api/v1/skills?view=basic')
      .set(...as(other, 'viewer'))
      .expect(200);
    expect(others.body.items.map((x: { id: string }) => x.id)).not.toContain(made[0]);
    for (const view of ['summary', 'BASIC', '', 'basic,full']) {
      const bad = await t.http
        .get(`/api/v1/skills?view=${encodeURIComponent(view)}`)
        .set(...as(scope, 'viewer'))
        .expect(400);
      expect(bad.body.errors).toEqual([expect.objectContaining({ path: 'view', code: 'isIn' })]);
    }
  });

  it('keeps every resource inside its organization', async () => {
    const c = await t.http
      .post('/api/v1/knowledge/collections')
      .set(...as(org, 'builder'))
      .send({ name: 'mine' })
      .expect(201);
    const d = await t.http
      .post(`/api/v1/knowledge/collections/${c.body.id}/documents`)
      .set(...as(org, 'builder'))
      .send({ title: 't', content: 'c' })
      .expect(201);
    const s = await t.http
      .post('/api/v1/skills')
      .set(...as(org, 'builder'))
      .send({ name: 'n', description: 'd', instructions: 'i' })
      .expect(201);
    const foreign = as(other, 'admin');
    for (const path of [
      `/api/v1/knowledge/collections/${c.body.id}`,
      `/api/v1/knowledge/collections/${c.body.id}/documents`,
      `/api/v1/knowledge/collections/${c.body.id}/documents/${d.body.id}`,
      `/api/v1/skills/${s.body.id}`,
    ]) {
      const res = await t.http
        .get(path)
        .set(...foreign)
        .expect(404);
      expect(res.body.code).toBe('not_found');
    }
    await t.http
      .post(`/api/v1/knowledge/collections/${c.body.id}/documents`)
      .set(...foreign)
      .send({ title: 't', content: 'c' })
      .expect(404);
    await t.http
      .delete(`/api/v1/knowledge/collections/${c.body.id}/documents/${d.body.id}`)
      .set(...foreign)
      .expect(404);
    await t.http
      .delete(`/api/v1/knowledge/collections/${c.body.id}`)
      .set(...foreign)
      .expect(404);
    await t.http
      .delete(`/api/v1/skills/${s.body.id}`)
      .set(...foreign)
      .expect(404);
    const lists = await t.http
      .get('/api/v1/knowledge/collections')
      .set(...foreign)
      .expect(200);
    expect(lists.body.items.map((x: { id: string }) => x.id)).not.toContain(c.body.id);
    const skills = await t.http
      .get('/api/v1/skills')
      .set(...foreign)
      .expect(200);
    expect(skills.body.items.map((x: { id: string }) => x.id)).not.toContain(s.body.id);
    // Still there for their owner.
    await t.http
      .get(`/api/v1/knowledge/collections/${c.body.id}/documents/${d.body.id}`)
      .set(...as(org, 'viewer'))
      .expect(200);
    await t.http
      .get(`/api/v1/knowledge/collections/${randomUUID()}`)
      .set(...as(org, 'viewer'))
      .expect(404);
    await t.http
      .get('/api/v1/knowledge/collections/not-a-uuid')
      .set(...as(org, 'viewer'))
      .expect(404);
  });

  it('lets viewers read and only builders write; agent keys read no resources', async () => {
    await t.http
      .post('/api/v1/knowledge/collections')
      .set(...as(org, 'viewer'))
      .send({ name: 'x' })
      .expect(403);
    await t.http
      .post('/api/v1/skills')
      .set(...as(org, 'approver'))
      .send({ name: 'x', description: 'd', instructions: 'i' })
      .expect(403);
    await t.http
      .get('/api/v1/knowledge/collections')
      .set(...as(org, 'agent'))
      .expect(403);
    await t.http
      .get('/api/v1/skills')
      .set(...as(org, 'agent'))
      .expect(403);
    await t.http
      .get('/api/v1/skills')
      .set(...bearer(t.adminToken))
      .expect(403);
    await t.http
      .post('/api/v1/skills')
      .set(...as(org, 'admin'))
      .send({ name: 'x', description: 'd', instructions: 'i' })
      .expect(201);
  });
});

/** The distinct paths of a problem's errors (one field may break several rules). */
function pathsOf(problem: { errors: { path: string }[] }): string[] {
  return [...new Set(problem.errors.map((e) => e.path))].sort();
}
