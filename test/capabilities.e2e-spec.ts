import { bearer, createOrg, createTestApp, TestApp } from './support/test-app';
import { FixtureCapabilitiesModule } from './fixtures/fixture-capabilities';

describe('capability catalog (e2e)', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp({ imports: [FixtureCapabilitiesModule] });
  });
  afterAll(() => t.close());

  const admin = () => bearer(t.adminToken);
  const ids = (body: { items: { id: string }[] }) => body.items.map((i) => i.id);

  it('lists every capability sorted by id, clock with its schema, the fixtures discovered app-wide', async () => {
    const res = await t.http
      .get('/api/v1/agents/capabilities')
      .set(...admin())
      .expect(200);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(ids(res.body)).toEqual(expect.arrayContaining(['clock', 'fixture-echo', 'fixture-notes']));
    expect(ids(res.body)).toEqual([...ids(res.body)].sort());
    const clock = res.body.items.find((i: { id: string }) => i.id === 'clock');
    expect(clock).toEqual({
      id: 'clock',
      name: 'Clock',
      category: 'context',
      description: expect.any(String),
      tags: ['time', 'context'],
      profiles: [],
      workerTypes: [],
      scopes: [],
      sideEffecting: false,
      risk: 'read_only',
      promptGuidance: expect.any(String),
      tools: [],
      configSchema: {
        $schema: 'https://json-schema.org/draft/2020-12/schema',
        type: 'object',
        properties: { timezone: expect.objectContaining({ type: 'string', default: 'UTC' }) },
        additionalProperties: false,
      },
    });
    expect(clock).not.toHaveProperty('available');
  });

  it('describes tools, risk and approval as API.md says', async () => {
    const res = await t.http
      .get('/api/v1/agents/capabilities')
      .set(...admin())
      .expect(200);
    const notes = res.body.items.find((i: { id: string }) => i.id === 'fixture-notes');
    expect(notes).toMatchObject({ sideEffecting: true, risk: 'destructive', scopes: ['notes:write'], profiles: ['support'], workerTypes: ['chat'] });
    expect(notes.tools.map((tool: { id: string; risk: string; requiresApproval: boolean }) => [tool.id, tool.risk, tool.requiresApproval])).toEqual([
      ['search_notes', 'read_only', false],
      ['write_note', 'mutating', true],
      ['delete_note', 'destructive', true],
    ]);
    expect(notes.tools[1]).toMatchObject({ maxOutputTokens: 500, interruptBefore: false, offloadLargeResults: false });
    expect(notes.tools[2]).toMatchObject({ maxOutputTokens: 0, interruptBefore: true, offloadLargeResults: true });
    expect(notes.configSchema.properties.units).toMatchObject({
      enum: ['metric', 'imperial'],
      default: 'metric',
      'x-enum-labels': { metric: expect.any(String), imperial: expect.any(String) },
    });
    expect(notes.configSchema.properties.style).toMatchObject({ 'x-multiline': true, default: '' });
    expect(notes.configSchema.properties.limits).toMatchObject({ type: 'object', additionalProperties: false, default: { maxNotes: 10 } });
    const echo = res.body.items.find((i: { id: string }) => i.id === 'fixture-echo');
    expect(echo).toMatchObject({ sideEffecting: false, risk: 'read_only', tools: [{ id: 'echo', requiresApproval: true }] });
    expect(echo.tools[0].inputSchema).toMatchObject({ type: 'object', required: ['text'], additionalProperties: false });
  });

  it('filters by category, tag, profile, workerType and risk, combined with AND', async () => {
    const get = async (query: string) =>
      ids(
        (
          await t.http
            .get(`/api/v1/agents/capabilities?${query}`)
            .set(...admin())
            .expect(200)
        ).body,
      );
    expect(await get('category=fixture-memory')).toEqual(['fixture-notes']);
    expect(await get('tag=utility')).toEqual(['fixture-echo']);
    // An empty profiles list applies to every profile.
    expect(await get('profile=support')).toEqual(expect.arrayContaining(['clock', 'fixture-echo', 'fixture-notes']));
    expect(await get('profile=sales')).not.toContain('fixture-notes');
    expect(await get('workerType=voice')).not.toContain('fixture-notes');
    expect(await get('workerType=chat')).toContain('fixture-notes');
    expect(await get('risk=destructive')).toEqual(['fixture-notes', 'memory-write']);
    expect(await get('risk=read_only')).not.toContain('fixture-notes');
    expect(await get('tag=notes&category=fixture-utility')).toEqual([]);
    expect(await get('tag=notes&risk=destructive&profile=support&workerType=chat&category=fixture-memory')).toEqual(['fixture-notes']);
  });

  it('refuses unknown filters and bad values with 400 naming the parameter', async () => {
    const unknown = await t.http
      .get('/api/v1/agents/capabilities?colour=red')
      .set(...admin())
      .expect(400);
    expect(unknown.body).toMatchObject({ status: 400, code: 'invalid_request', errors: [{ path: 'colour', code: 'unknown_property' }] });
    const risk = await t.http
      .get('/api/v1/agents/capabilities?risk=scary')
      .set(...admin())
      .expect(400);
    expect(risk.body.errors.map((e: { path: string }) => e.path)).toEqual(['risk']);
    const twice = await t.http
      .get('/api/v1/agents/capabilities?tag=a&tag=b')
      .set(...admin())
      .expect(400);
    expect(twice.body.errors[0].path).toBe('tag');
    // The route validates its query itself (not through @Query()): the same refusals as every list.
    const nul = await t.http
      .get('/api/v1/agents/capabilities?category=a%00b')
      .set(...admin())
      .expect(400);
    expect(nul.body.errors[0].path).toBe('category');
    const proto = await t.http
      .get('/api/v1/agents/capabilities?__proto__=x&constructor=y')
      .set(...admin())
      .expect(400);
    expect(proto.body.errors.map((e: { path: string }) => e.path).sort()).toEqual(['__proto__', 'constructor']);
    const limit = await t.http
      .get('/api/v1/agents/capabilities?limit=0')
      .set(...admin())
      .expect(400);
    expect(limit.body.errors[0].path).toBe('limit');
  });

  it('needs a token, and serves every role', async () => {
    const res = await t.http.get('/api/v1/agents/capabilities').expect(401);
    expect(res.body.code).toBe('unauthorized');
    const org = await createOrg(t);
    for (const role of ['viewer', 'builder', 'agent', 'approver', 'admin'] as const) {
      await t.http
        .get('/api/v1/agents/capabilities')
        .set(...bearer(org.keys[role]))
        .expect(200);
    }
  });

  it('says which capabilities an organization key may use', async () => {
    const granted = await createOrg(t, ['notes:write']);
    const bare = await createOrg(t);
    const availability = async (token: string) =>
      Object.fromEntries(
        (
          await t.http
            .get('/api/v1/agents/capabilities')
            .set(...bearer(token))
            .expect(200)
        ).body.items.map((i: { id: string; available: boolean }) => [i.id, i.available]),
      );
    expect(await availability(granted.keys.viewer)).toMatchObject({ clock: true, 'fixture-echo': true, 'fixture-notes': true });
    expect(await availability(bare.keys.viewer)).toMatchObject({ clock: true, 'fixture-echo': true, 'fixture-notes': false });
  });

  it('answers 304 to a matching If-None-Match, with an ETag that differs per organization', async () => {
    const granted = await createOrg(t, ['notes:write']);
    const bare = await createOrg(t);
    const first = await t.http
      .get('/api/v1/agents/capabilities')
      .set(...bearer(granted.keys.viewer))
      .expect(200);
    const etag = first.headers.etag;
    expect(etag).toMatch(/^"[A-Za-z0-9_-]+"$/);
    expect(first.headers.vary).toMatch(/Authorization/i);
    const again = await t.http
      .get('/api/v1/agents/capabilities')
      .set(...bearer(granted.keys.admin))
      .set('If-None-Match', etag)
      .expect(304);
    expect(again.text).toBe('');
    expect(again.headers.etag).toBe(etag);
    await t.http
      .get('/api/v1/agents/capabilities')
      .set(...bearer(granted.keys.viewer))
      .set('If-None-Match', `"other", W/${etag}`)
      .expect(304);
    await t.http
      .get('/api/v1/agents/capabilities')
      .set(...bearer(granted.keys.viewer))
      .set('If-None-Match', '*')
      .expect(304);
    await t.http
      .get('/api/v1/agents/capabilities')
      .set(...bearer(granted.keys.viewer))
      .set('If-None-Match', '"stale"')
      .expect(200);
    const other = await t.http
      .get('/api/v1/agents/capabilities')
      .set(...bearer(bare.keys.viewer))
      .set('If-None-Match', etag)
      .expect(200);
    expect(other.headers.etag).not.toBe(etag);
    const filtered = await t.http
      .get('/api/v1/agents/capabilities?tag=utility')
      .set(...bearer(granted.keys.viewer))
      .set('If-None-Match', etag)
      .expect(200);
    expect(filtered.headers.etag).not.toBe(etag);
  });

  it('documents the route in OpenAPI', async () => {
    const doc = await t.http.get('/api/docs-json').expect(200);
    const op = doc.body.paths['/api/v1/agents/capabilities'].get;
    expect(op.parameters.map((p: { name: string }) => p.name)).toEqual([
      'limit',
      'cursor',
      'category',
      'tag',
      'profile',
      'workerType',
      'risk',
      'If-None-Match',
    ]);
    // Documented from the query class (ApiQueryOf), as @Query() documents every other list: enums and bounds included.
    const param = (name: string) => op.parameters.find((p: { name: string }) => p.name === name);
    expect(param('risk')).toMatchObject({ in: 'query', required: false, schema: { type: 'string', enum: ['read_only', 'mutating', 'destructive'] } });
    expect(param('limit')).toMatchObject({ in: 'query', required: false, schema: { type: 'integer', minimum: 1, maximum: 200, default: 50 } });
    expect(Object.keys(op.responses)).toEqual(expect.arrayContaining(['200', '304', '400', '401']));
  });
});
