import { DataSource } from 'typeorm';
import { MAX_ACTIVE_API_KEYS_PER_ORG } from '../src/orgs/orgs.service';
import { bearer, createOrg, createTestApp, TestApp } from './support/test-app';

describe('organizations, API keys and /me (e2e)', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(() => t.close());

  const admin = () => bearer(t.adminToken);

  it('creates an organization and records org.created', async () => {
    const res = await t.http
      .post('/api/v1/orgs')
      .set(...admin())
      .send({ slug: 'acme', name: 'Acme', scopes: ['knowledge:read'] })
      .expect(201);
    expect(res.body).toEqual({ id: expect.any(String), slug: 'acme', name: 'Acme', scopes: ['knowledge:read'], createdAt: expect.any(String) });
    const again = await t.http
      .post('/api/v1/orgs')
      .set(...admin())
      .send({ slug: 'acme', name: 'Other' })
      .expect(409);
    expect(again.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(again.body).toMatchObject({ status: 409, code: 'conflict', title: 'Conflict' });
  });

  it('refuses bad bodies naming each field, and writes nothing', async () => {
    const res = await t.http
      .post('/api/v1/orgs')
      .set(...admin())
      .send({ slug: 'A', name: 5, scopes: ['Bad Scope'], orgId: 'x' })
      .expect(400);
    expect(res.body.code).toBe('invalid_request');
    const paths = res.body.errors.map((e: { path: string }) => e.path).sort();
    expect(paths).toEqual(expect.arrayContaining(['name', 'orgId', 'scopes[0]', 'slug']));
    const list = await t.http
      .get('/api/v1/orgs')
      .set(...admin())
      .expect(200);
    expect(list.body.items.map((o: { slug: string }) => o.slug)).not.toContain('A');
  });

  it("refuses a slug shaped like a UUID, even another organization's id: an org claim (id or slug) would be ambiguous", async () => {
    const first = await t.http
      .post('/api/v1/orgs')
      .set(...admin())
      .send({ slug: 'uuid-first', name: 'First' })
      .expect(201);
    for (const slug of [first.body.id, 'd19c9a2e-c934-4578-94c9-4883e14425f1']) {
      const res = await t.http
        .post('/api/v1/orgs')
        .set(...admin())
        .send({ slug, name: 'Shadow' })
        .expect(400);
      expect(res.body.code).toBe('invalid_request');
      expect(res.body.errors).toEqual([{ path: 'slug', code: 'notUuidShaped', message: expect.stringMatching(/UUID/) }]);
    }
    const list = await t.http
      .get('/api/v1/orgs?limit=200')
      .set(...admin())
      .expect(200);
    expect(list.body.items.filter((o: { name: string }) => o.name === 'Shadow')).toEqual([]);
  });

  it('answers 401 without, with an unknown, and with a malformed token', async () => {
    // Each names the scheme that would work (RFC 9110); it was missing.
    await t.http.get('/api/v1/me').expect(401).expect('WWW-Authenticate', 'Bearer');
    const res = await t.http.get('/api/v1/me').set('Authorization', 'Bearer cpk_nope').expect(401).expect('WWW-Authenticate', 'Bearer');
    expect(res.body.code).toBe('unauthorized');
    await t.http.get('/api/v1/me').set('Authorization', 'Basic abc').expect(401).expect('WWW-Authenticate', 'Bearer');
  });

  it('refuses a key name that would show as another (bidi override, line break, invisible), naming the field, and makes no key', async () => {
    const org = await createOrg(t);
    for (const name of ['deploy\u202etoor', 'ops\nadmin', 'admin\u200b', 'admin ']) {
      const res = await t.http
        .post(`/api/v1/orgs/${org.id}/api-keys`)
        .set(...bearer(org.keys.admin))
        .send({ name, roles: ['admin'] })
        .expect(400);
      expect(res.body).toMatchObject({ code: 'invalid_request', errors: [expect.objectContaining({ path: 'name' })] });
    }
    const [{ n }] = await t.app.get(DataSource).query(`SELECT count(*)::int AS n FROM api_key WHERE org_id = $1`, [org.id]);
    expect(n).toBe(5);
    await t.http
      .post(`/api/v1/orgs/${org.id}/api-keys`)
      .set(...bearer(org.keys.admin))
      .send({ name: 'Zürich 🚀 runtime', roles: ['viewer'] })
      .expect(201);
  });

  it('holds an organization to 1,000 keys not revoked: past it 409 and nothing made; a revoked key frees its place', async () => {
    const org = await createOrg(t);
    // Filled by the database (the roles' five keys are there already): a thousand requests would only slow the test.
    await t.app.get(DataSource).query(
      // Made two days ago: the keys made in a day are bounded too (test/api-keys-made-per-day.e2e-spec.ts).
      `INSERT INTO api_key (id, org_id, name, roles, token_prefix, token_hash, created_at)
         SELECT gen_random_uuid(), $1::uuid, 'filler ' || i, ARRAY['viewer'], 'cpk_fill', 'fill-' || $1::text || '-' || i, now() - interval '2 days'
           FROM generate_series(1, $2::int - 5) i`,
      [org.id, MAX_ACTIVE_API_KEYS_PER_ORG],
    );
    const create = (name: string) =>
      t.http
        .post(`/api/v1/orgs/${org.id}/api-keys`)
        .set(...bearer(org.keys.admin))
        .send({ name, roles: ['viewer'] });
    const refused = await create('one too many').expect(409);
    expect(refused.body).toMatchObject({ code: 'conflict', detail: expect.stringContaining(`at most ${MAX_ACTIVE_API_KEYS_PER_ORG} API keys`) });
    const [{ n }] = await t.app.get(DataSource).query(`SELECT count(*)::int AS n FROM api_key WHERE org_id = $1 AND name = 'one too many'`, [org.id]);
    expect(n).toBe(0);
    // Another organization's keys are its own.
    const other = await createOrg(t);
    await t.http
      .post(`/api/v1/orgs/${other.id}/api-keys`)
      .set(...bearer(other.keys.admin))
      .send({ name: 'theirs', roles: ['viewer'] })
      .expect(201);
    await t.http
      .delete(`/api/v1/orgs/${org.id}/api-keys/${org.keyIds.viewer}`)
      .set(...bearer(org.keys.admin))
      .expect(204);
    await create('in its place').expect(201);
    await create('and no more').expect(409);
  });

  it('issues keys shown once, identifies them with /me, and refuses them once revoked', async () => {
    const org = await createOrg(t);
    const me = await t.http
      .get('/api/v1/me')
      .set(...bearer(org.keys.viewer))
      .expect(200);
    expect(me.body).toEqual({ type: 'api_key', id: org.keyIds.viewer, orgId: org.id, roles: ['viewer'] });
    const list = await t.http
      .get(`/api/v1/orgs/${org.id}/api-keys`)
      .set(...bearer(org.keys.admin))
      .expect(200);
    expect(list.body.items).toHaveLength(5);
    expect(JSON.stringify(list.body)).not.toContain(org.keys.viewer);
    await t.http
      .delete(`/api/v1/orgs/${org.id}/api-keys/${org.keyIds.viewer}`)
      .set(...bearer(org.keys.admin))
      .expect(204);
    await t.http
      .get('/api/v1/me')
      .set(...bearer(org.keys.viewer))
      .expect(401);
    const platformMe = await t.http
      .get('/api/v1/me')
      .set(...admin())
      .expect(200);
    expect(platformMe.body).toEqual({ type: 'platform', id: 'platform' });
  });

  it('hides another organization behind 404', async () => {
    const a = await createOrg(t);
    const b = await createOrg(t);
    await t.http
      .get(`/api/v1/orgs/${a.id}`)
      .set(...bearer(a.keys.viewer))
      .expect(200);
    const res = await t.http
      .get(`/api/v1/orgs/${a.id}`)
      .set(...bearer(b.keys.admin))
      .expect(404);
    expect(res.body.code).toBe('not_found');
    await t.http
      .get(`/api/v1/orgs/${a.id}/api-keys`)
      .set(...bearer(b.keys.admin))
      .expect(404);
    await t.http
      .post(`/api/v1/orgs/${a.id}/api-keys`)
      .set(...bearer(b.keys.admin))
      .send({ name: 'x', roles: ['viewer'] })
      .expect(404);
    await t.http
      .delete(`/api/v1/orgs/${a.id}/api-keys/${a.keyIds.viewer}`)
      .set(...bearer(b.keys.admin))
      .expect(404);
    await t.http
      .delete(`/api/v1/orgs/${b.id}/api-keys/${a.keyIds.viewer}`)
      .set(...bearer(b.keys.admin))
      .expect(404);
    await t.http
      .get('/api/v1/me')
      .set(...bearer(a.keys.viewer))
      .expect(200);
  });

  it('refuses roles where API.md says so', async () => {
    const org = await createOrg(t);
    await t.http
      .post('/api/v1/orgs')
      .set(...bearer(org.keys.admin))
      .send({ slug: 'zzz', name: 'z' })
      .expect(403);
    await t.http
      .get('/api/v1/orgs')
      .set(...bearer(org.keys.admin))
      .expect(403);
    await t.http
      .put(`/api/v1/orgs/${org.id}/scopes`)
      .set(...bearer(org.keys.admin))
      .send({ scopes: [] })
      .expect(403);
    for (const role of ['viewer', 'builder', 'agent', 'approver'] as const) {
      await t.http
        .get(`/api/v1/orgs/${org.id}/api-keys`)
        .set(...bearer(org.keys[role]))
        .expect(403);
      await t.http
        .post(`/api/v1/orgs/${org.id}/api-keys`)
        .set(...bearer(org.keys[role]))
        .send({ name: 'x', roles: ['admin'] })
        .expect(403);
      await t.http
        .get('/api/v1/audit-events')
        .set(...bearer(org.keys[role]))
        .expect(403);
    }
    await t.http
      .get('/api/v1/audit-events')
      .set(...admin())
      .expect(403);
  });

  it('keeps the audit trail of an organization, newest first, with cursor pages', async () => {
    const org = await createOrg(t);
    await t.http
      .put(`/api/v1/orgs/${org.id}/scopes`)
      .set(...admin())
      .send({ scopes: ['memory:read', 'knowledge:read'] })
      .expect(200);
    const first = await t.http
      .get('/api/v1/audit-events?limit=3')
      .set(...bearer(org.keys.admin))
      .expect(200);
    expect(first.body.items.map((e: { type: string }) => e.type)).toEqual(['org.scopes_updated', 'api_key.created', 'api_key.created']);
    expect(first.body.items[0]).toMatchObject({
      orgId: org.id,
      actor: { type: 'platform', id: 'platform' },
      target: { type: 'org', id: org.id },
      data: { added: ['knowledge:read', 'memory:read'] },
    });
    const second = await t.http
      .get(`/api/v1/audit-events?limit=50&cursor=${first.body.nextCursor}`)
      .set(...bearer(org.keys.admin))
      .expect(200);
    expect(second.body.items.map((e: { type: string }) => e.type)).toEqual(['api_key.created', 'api_key.created', 'api_key.created', 'org.created']);
    expect(second.body.nextCursor).toBeNull();
    const filtered = await t.http
      .get('/api/v1/audit-events?type=org.created')
      .set(...bearer(org.keys.admin))
      .expect(200);
    expect(filtered.body.items).toHaveLength(1);
  });

  it('filters the audit trail by `since`, an instant read as UTC unless it names its offset', async () => {
    const org = await createOrg(t);
    const all = (
      await t.http
        .get('/api/v1/audit-events')
        .set(...bearer(org.keys.admin))
        .expect(200)
    ).body.items as { at: string }[];
    const newest = new Date(all[0].at);
    const since = async (value: string) =>
      (
        (
          await t.http
            .get('/api/v1/audit-events')
            .query({ since: value })
            .set(...bearer(org.keys.admin))
            .expect(200)
        ).body.items as { at: string }[]
      ).length;
    const shifted = (ms: number, hours = 0) => new Date(newest.getTime() + ms + hours * 3_600_000).toISOString().slice(0, 23);
    expect(await since(newest.toISOString())).toBeGreaterThanOrEqual(1);
    expect(await since(`${shifted(1)}Z`)).toBe(0);
    expect(await since(shifted(0))).toBeGreaterThanOrEqual(1);
    expect(await since(shifted(1))).toBe(0);
    expect(await since(`${shifted(0, 2)}+02:00`)).toBeGreaterThanOrEqual(1);
    expect(await since(`${shifted(1, 2)}+0200`)).toBe(0);
    expect(await since('2000-01-01')).toBe(all.length);
    // Forms a validator calls ISO 8601 but the database does not read: `2020-W01` answered 500.
    for (const bad of ['2020-W01', '2020-001', 'yesterday', '2020-02-30', '2020-01-01T24:00:00Z', '2020-01-01T00:00:00+16:00']) {
      const res = await t.http
        .get('/api/v1/audit-events')
        .query({ since: bad })
        .set(...bearer(org.keys.admin))
        .expect(400);
      expect(res.body).toMatchObject({ code: 'invalid_request', errors: [{ path: 'since' }] });
    }
  });

  it('reads a window of the audit trail with `since` and `until` (exclusive), paged by cursor', async () => {
    const org = await createOrg(t);
    for (let i = 0; i < 5; i++) {
      await t.http
        .post('/api/v1/agents')
        .set(...bearer(org.keys.builder))
        .send({ slug: `window-${i}`, name: `w${i}` })
        .expect(201);
    }
    const read = async (query: Record<string, string | number>) => {
      const items: { id: string; at: string }[] = [];
      let cursor: string | undefined;
      do {
        const res = await t.http
          .get('/api/v1/audit-events')
          .query({ ...query, ...(cursor ? { cursor } : {}) })
          .set(...bearer(org.keys.admin))
          .expect(200);
        items.push(...(res.body.items as { id: string; at: string }[]));
        cursor = res.body.nextCursor ?? undefined;
      } while (cursor);
      return items;
    };
    const all = await read({ type: 'agent.created' });
    expect(all).toHaveLength(5);
    // Newest first by time; the window from the fourth newest up to (not including) the newest.
    const ats = all.map((e) => Date.parse(e.at));
    expect([...ats].sort((a, b) => b - a)).toEqual(ats);
    const window = await read({ type: 'agent.created', since: all[3].at, until: all[0].at, limit: 1 });
    expect(window.map((e) => e.id)).toEqual(all.filter((e) => e.at >= all[3].at && e.at < all[0].at).map((e) => e.id));
    expect(window.map((e) => e.id)).not.toContain(all[0].id);
    expect(window.map((e) => e.id)).toContain(all[3].id);
    expect(await read({ until: '2000-01-01' })).toEqual([]);
    expect((await read({ until: '9999-12-31', limit: 2 })).length).toBe((await read({})).length);
    // A cursor of the whole trail, read with an `until` below it: the lower bound wins.
    const first = await t.http
      .get('/api/v1/audit-events')
      .query({ limit: 1 })
      .set(...bearer(org.keys.admin))
      .expect(200);
    const below = await t.http
      .get('/api/v1/audit-events')
      .query({ cursor: first.body.nextCursor, until: all[2].at, type: 'agent.created' })
      .set(...bearer(org.keys.admin))
      .expect(200);
    expect(below.body.items.map((e: { id: string }) => e.id)).toEqual(all.filter((e) => e.at < all[2].at).map((e) => e.id));
    for (const [query, path] of [
      [{ until: 'tomorrow' }, 'until'],
      [{ until: '2020-02-30' }, 'until'],
      [{ since: '2026-01-02', until: '2026-01-01T23:59:59Z' }, 'until'],
    ] as const) {
      const res = await t.http
        .get('/api/v1/audit-events')
        .query(query)
        .set(...bearer(org.keys.admin))
        .expect(400);
      expect(res.body).toMatchObject({ code: 'invalid_request', errors: [{ path }] });
    }
  });

  it('answers 413 for bodies over 1 MiB and 400 for broken JSON, as problem documents', async () => {
    const big = await t.http
      .post('/api/v1/orgs')
      .set(...admin())
      .send({ slug: 'big', name: 'x'.repeat(1024 * 1024 + 10) })
      .expect(413);
    expect(big.body.code).toBe('payload_too_large');
    expect(big.headers['content-type']).toMatch(/problem\+json/);
    const broken = await t.http
      .post('/api/v1/orgs')
      .set(...admin())
      .set('Content-Type', 'application/json')
      .send('{"slug":')
      .expect(400);
    expect(broken.body.code).toBe('invalid_request');
  });

  it('answers unknown routes with a 404 problem', async () => {
    const res = await t.http
      .get('/api/v1/nothing-here')
      .set(...admin())
      .expect(404);
    expect(res.body.code).toBe('not_found');
  });

  it('serves health, readiness and the OpenAPI document without a token', async () => {
    await t.http.get('/health').expect(200, { status: 'ok' });
    await t.http.get('/health/ready').expect(200);
    const doc = await t.http.get('/api/docs-json').expect(200);
    expect(doc.body.paths['/api/v1/orgs']).toBeDefined();
  });
});
