import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
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
      await t.http
        .post('/api/v1/knowledge/collections')
        .set(...as)
        .send({ name: `c${i}` })
        .expect(201);
      await t.http
        .post('/api/v1/skills')
        .set(...as)
        .send({ name: `skill-${i}`, description: 'd', instructions: 'i' })
        .expect(201);
      await t.http
        .post('/api/v1/agents')
        .set(...as)
        .send({ slug: `agent-${i}`, name: `a${i}` })
        .expect(201);
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

  it("walks the audit log with sealed cursors that no other organization's list takes", async () => {
    const all = await walk('/api/v1/audit-events', 200);
    expect(all.length).toBeGreaterThanOrEqual(9);
    expect(await walk('/api/v1/audit-events', 1)).toEqual(all);
    expect(await walk('/api/v1/audit-events', 4)).toEqual(all);
    const page = await t.http
      .get('/api/v1/audit-events')
      .query({ limit: 1 })
      .set(...bearer(org.keys.admin))
      .expect(200);
    // The cursor carries the audit sequence, which every organization shares, sealed under this one's key.
    const inside = JSON.parse(Buffer.from(page.body.nextCursor, 'base64url').toString()) as unknown[];
    expect(inside).toEqual([expect.stringMatching(/^[A-Za-z0-9_-]{32}$/)]);
    const [seq] = (await t.app.get(DataSource).query(`SELECT max(seq)::text AS seq FROM audit_event WHERE org_id = $1`, [org.id])) as { seq: string }[];
    const other = await createOrg(t);
    for (const [cursor, what] of [
      [page.body.nextCursor, "another organization's cursor"],
      [Buffer.from(JSON.stringify([seq.seq])).toString('base64url'), 'the plain sequence, as cursors were before they were sealed'],
    ]) {
      const res = await t.http
        .get('/api/v1/audit-events')
        .query({ cursor })
        .set(...bearer(other.keys.admin));
      expect([what, res.status, res.body.errors?.[0]]).toEqual([what, 400, expect.objectContaining({ path: 'cursor', code: 'invalid_cursor' })]);
    }
  });

  it.each(['/api/v1/knowledge/collections', '/api/v1/skills', '/api/v1/agents', 'KEYS'])(
    '%s: every item once, in the same order at any page size',
    async (route) => {
      const path = route === 'KEYS' ? `/api/v1/orgs/${org.id}/api-keys` : route;
      const all = await walk(path, 200);
      expect(all.length).toBeGreaterThanOrEqual(3);
      expect(new Set(all).size).toBe(all.length);
      expect(await walk(path, 1)).toEqual(all);
      expect(await walk(path, 2)).toEqual(all);
    },
  );

  /** Every list API.md names, with the token that may read it. */
  function lists(agentId: string, collectionId: string): [string, string][] {
    return [
      ['/api/v1/orgs', t.adminToken],
      [`/api/v1/orgs/${org.id}/api-keys`, org.keys.admin],
      ['/api/v1/agents', org.keys.viewer],
      [`/api/v1/agents/${agentId}/versions`, org.keys.viewer],
      ['/api/v1/tool-calls', org.keys.viewer],
      ['/api/v1/approvals', org.keys.viewer],
      ['/api/v1/audit-events', org.keys.admin],
      ['/api/v1/knowledge/collections', org.keys.viewer],
      [`/api/v1/knowledge/collections/${collectionId}/documents`, org.keys.viewer],
      ['/api/v1/skills', org.keys.viewer],
      ['/api/v1/agents/capabilities', org.keys.viewer],
      [`/api/v1/agents/${agentId}/versions/latest/tools`, org.keys.agent],
    ];
  }

  it('answers every list with { items, nextCursor }, takes limit 1..200, and refuses any cursor it did not issue with 400', async () => {
    const agent = await t.http
      .post('/api/v1/agents')
      .set(...bearer(org.keys.builder))
      .send({ slug: 'paged', name: 'Paged' })
      .expect(201);
    await t.http
      .post(`/api/v1/agents/${agent.body.id}/publish`)
      .set(...bearer(org.keys.builder))
      .expect(201);
    const collection = await t.http
      .post('/api/v1/knowledge/collections')
      .set(...bearer(org.keys.builder))
      .send({ name: 'docs' })
      .expect(201);
    const cursor = (key: unknown) => Buffer.from(JSON.stringify(key)).toString('base64url');
    // Well-formed cursors of every kind but each list's own: found by this test, most of them reached
    // the database and answered 500. A list answers each with 400, or with a page when it is a key
    // of its own kind (a slug is any text).
    const forged = [
      cursor(['x', 'y']),
      cursor(['x']),
      cursor([1]),
      cursor([1.5]),
      cursor(['1e400']),
      cursor(['99999999999999999999999']),
      cursor(['2026-01-01T00:00:00Z', 'nope']),
      cursor(['2026-02-30T00:00:00Z', randomUUID()]),
      cursor(['nope', randomUUID()]),
      cursor(['a\u0000b']),
    ];
    const neverIssued = ['garbage!!', cursor([]), cursor([null]), cursor([{ x: 1 }]), cursor({ at: 1 })];
    for (const [path, token] of lists(agent.body.id, collection.body.id)) {
      for (const limit of [1, 200]) {
        const res = await t.http
          .get(path)
          .query({ limit })
          .set(...bearer(token))
          .expect(200);
        expect(Object.keys(res.body).sort()).toEqual(['items', 'nextCursor']);
        expect(res.body.items.length).toBeLessThanOrEqual(limit);
        const next = res.body.nextCursor;
        if (next !== null)
          await t.http
            .get(path)
            .query({ limit, cursor: next })
            .set(...bearer(token))
            .expect(200);
      }
      // Only decimal digits are an integer: Number() had read hexadecimal, binary, octal, exponent and signed spellings.
      for (const limit of ['0', '201', 'abc', '1.5', '', '0x2', '0b11', '0o3', '2e0', '+2', ' 2', '2 ', '-0']) {
        const res = await t.http
          .get(path)
          .query({ limit })
          .set(...bearer(token));
        expect([res.status, res.body.code, res.body.errors?.[0]?.path]).toEqual([400, 'invalid_request', 'limit']);
      }
      for (const bad of forged) {
        const res = await t.http
          .get(path)
          .query({ cursor: bad })
          .set(...bearer(token));
        if (res.status !== 400 && res.status !== 200) throw new Error(`${path} with cursor ${Buffer.from(bad, 'base64url').toString()} answered ${res.status}`);
        if (res.status === 400) expect(res.body).toMatchObject({ code: 'invalid_request', errors: [{ path: 'cursor', code: 'invalid_cursor' }] });
      }
      for (const bad of neverIssued) {
        const res = await t.http
          .get(path)
          .query({ cursor: bad })
          .set(...bearer(token))
          .expect(400);
        expect(res.body).toMatchObject({ code: 'invalid_request', errors: [{ path: 'cursor', code: 'invalid_cursor' }] });
      }
    }
  });

  it('pages the catalog and the offered tools like every other list, in their own order', async () => {
    // Both answered { items } only, and refused `limit` and `cursor` as unknown parameters (400).
    const o = await createOrg(t, ['memory:read', 'memory:write']);
    const a = await t.http
      .post('/api/v1/agents')
      .set(...bearer(o.keys.builder))
      .send({ slug: 'tools-paged', name: 'Tools' })
      .expect(201);
    await t.http
      .put(`/api/v1/agents/${a.body.id}/draft`)
      .set(...bearer(o.keys.builder))
      .send({ instructions: '', capabilities: [{ id: 'memory' }, { id: 'memory-write' }] })
      .expect(200);
    await t.http
      .post(`/api/v1/agents/${a.body.id}/publish`)
      .set(...bearer(o.keys.builder))
      .expect(201);
    for (const [path, key] of [
      ['/api/v1/agents/capabilities', (i: { id: string }) => i.id],
      [`/api/v1/agents/${a.body.id}/versions/latest/tools`, (i: { name: string }) => i.name],
      [`/api/v1/agents/${a.body.id}/versions/latest/tools?format=anthropic`, (i: { name: string }) => i.name],
    ] as const) {
      const all = await t.http
        .get(path)
        .query({ limit: 200 })
        .set(...bearer(o.keys.agent))
        .expect(200);
      expect(all.body.nextCursor).toBeNull();
      expect(all.body.items.length).toBeGreaterThanOrEqual(3);
      const walked: unknown[] = [];
      let cursor: string | null = null;
      do {
        const res: { body: { items: unknown[]; nextCursor: string | null } } = await t.http
          .get(path)
          .query({ limit: 1, ...(cursor ? { cursor } : {}) })
          .set(...bearer(o.keys.agent))
          .expect(200);
        expect(res.body.items).toHaveLength(1);
        walked.push(...res.body.items);
        cursor = res.body.nextCursor;
      } while (cursor);
      expect(walked.map(key as (i: unknown) => string)).toEqual(all.body.items.map(key as (i: unknown) => string));
    }
  });

  it('pages rows created within one millisecond without losing any, and gives 50 items by default', async () => {
    // PostgreSQL keeps microseconds; a cursor cut to the millisecond skipped the rows after it in that millisecond.
    const ds = t.app.get(DataSource);
    const o = await createOrg(t);
    const collectionId = randomUUID();
    await ds.query(`INSERT INTO knowledge_collection (id, org_id, name) VALUES ($1, $2, 'same ms')`, [collectionId, o.id]);
    const at = (i: number) => `2026-03-01T10:00:00.123${String(100 + i).padStart(3, '0')}Z`;
    for (let i = 0; i < 55; i++) {
      await ds.query(`INSERT INTO skill (id, org_id, name, description, instructions, created_at) VALUES ($1, $2, $3, 'd', 'i', $4)`, [
        randomUUID(),
        o.id,
        `s${i}`,
        at(i),
      ]);
      await ds.query(`INSERT INTO knowledge_document (id, org_id, collection_id, title, content, created_at) VALUES ($1, $2, $3, $4, 'c', $5)`, [
        randomUUID(),
        o.id,
        collectionId,
        `d${i}`,
        at(i),
      ]);
    }
    for (const path of ['/api/v1/skills', `/api/v1/knowledge/collections/${collectionId}/documents`]) {
      const first = await t.http
        .get(path)
        .set(...bearer(o.keys.viewer))
        .expect(200);
      expect(first.body.items).toHaveLength(50);
      expect(first.body.nextCursor).toEqual(expect.any(String));
      const ids: string[] = [];
      let cursor: string | null = null;
      do {
        const res: { body: { items: { id: string; createdAt: string }[]; nextCursor: string | null } } = await t.http
          .get(path)
          .query({ limit: 2, ...(cursor ? { cursor } : {}) })
          .set(...bearer(o.keys.viewer))
          .expect(200);
        ids.push(...res.body.items.map((i) => i.id));
        cursor = res.body.nextCursor;
      } while (cursor);
      expect(ids).toHaveLength(55);
      expect(new Set(ids).size).toBe(55);
      expect(ids).toEqual([...first.body.items.map((i: { id: string }) => i.id), ...ids.slice(50)]);
    }
  });

  it('ends a page early when its items are large (about 4 MiB of them), and nextCursor reaches the rest', async () => {
    // An organization of its own: the lists above keep their counts.
    const big = await createOrg(t);
    const as = bearer(big.keys.builder);
    // About 0.9 MB each, within the 1 MiB body limit: an agent's draft config is free-form until publish.
    const blob = Object.fromEntries(Array.from({ length: 90 }, (_, i) => [`k${i}`, 'v'.repeat(10_000)]));
    const collection = await t.http
      .post('/api/v1/knowledge/collections')
      .set(...as)
      .send({ name: 'big' })
      .expect(201);
    const [agents, documents] = [[] as string[], [] as string[]];
    for (let i = 0; i < 7; i++) {
      const a = await t.http
        .post('/api/v1/agents')
        .set(...as)
        .send({ slug: `big-${i}`, name: `Big ${i}` })
        .expect(201);
      await t.http
        .put(`/api/v1/agents/${a.body.id}/draft`)
        .set(...as)
        .send({ instructions: 'x', capabilities: [{ id: 'clock', config: blob }] })
        .expect(200);
      agents.push(a.body.id);
      const d = await t.http
        .post(`/api/v1/knowledge/collections/${collection.body.id}/documents`)
        .set(...as)
        .send({ title: `d${i}`, content: 'c', metadata: blob })
        .expect(201);
      documents.push(d.body.id);
    }
    for (const [path, ids] of [
      ['/api/v1/agents', agents],
      [`/api/v1/knowledge/collections/${collection.body.id}/documents`, documents],
    ] as const) {
      const seen: string[] = [];
      let cursor: string | null = null;
      let pages = 0;
      do {
        const res: { text: string; body: { items: { id: string }[]; nextCursor: string | null } } = await t.http
          .get(path)
          .query({ limit: 200, ...(cursor ? { cursor } : {}) })
          .set(...bearer(big.keys.viewer))
          .expect(200);
        // Items of 0.9 MB: past 4 MiB after five, so a page holds at most five, about 4.5 MB.
        expect(res.body.items.length).toBeGreaterThanOrEqual(1);
        expect(res.body.items.length).toBeLessThanOrEqual(5);
        expect(Buffer.byteLength(res.text)).toBeLessThan(5 * 1024 * 1024);
        seen.push(...res.body.items.map((i) => i.id));
        cursor = res.body.nextCursor;
        pages++;
      } while (cursor && pages < 10);
      expect(pages).toBe(2);
      expect([...seen].sort()).toEqual([...ids].sort());
    }
  });
});
