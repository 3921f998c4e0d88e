import { randomUUID } from 'node:crypto';
import { bearer, createOrg, createTestApp, TestApp, TestOrg } from './support/test-app';

describe('agents and drafts (e2e)', () => {
  let t: TestApp;
  let org: TestOrg;
  beforeAll(async () => {
    t = await createTestApp();
    org = await createOrg(t);
  });
  afterAll(() => t.close());

  const as = (o: TestOrg, role: keyof TestOrg['keys']) => bearer(o.keys[role]);

  it('creates an agent with an empty draft and records agent.created', async () => {
    const res = await t.http
      .post('/api/v1/agents')
      .set(...as(org, 'builder'))
      .send({ slug: 'support-bot', name: 'Support bot', description: 'Answers' })
      .expect(201);
    expect(res.body).toEqual({
      id: expect.any(String),
      slug: 'support-bot',
      name: 'Support bot',
      description: 'Answers',
      draft: { instructions: '', capabilities: [] },
      latestVersion: null,
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
    });
    const events = await t.http
      .get('/api/v1/audit-events?type=agent.created')
      .set(...as(org, 'admin'))
      .expect(200);
    expect(events.body.items[0]).toMatchObject({ target: { type: 'agent', id: res.body.id }, actor: { type: 'api_key', id: org.keyIds.builder } });
  });

  it('keeps slugs unique per organization, not across them', async () => {
    await t.http
      .post('/api/v1/agents')
      .set(...as(org, 'builder'))
      .send({ slug: 'dup', name: 'A' })
      .expect(201);
    const again = await t.http
      .post('/api/v1/agents')
      .set(...as(org, 'builder'))
      .send({ slug: 'dup', name: 'B' })
      .expect(409);
    expect(again.body.code).toBe('conflict');
    const other = await createOrg(t);
    await t.http
      .post('/api/v1/agents')
      .set(...as(other, 'builder'))
      .send({ slug: 'dup', name: 'C' })
      .expect(201);
    const bad = await t.http
      .post('/api/v1/agents')
      .set(...as(org, 'builder'))
      .send({ slug: 'Bad Slug', name: '', x: 1 })
      .expect(400);
    expect(pathsOf(bad.body)).toEqual(['name', 'slug', 'x']);
  });

  it('lists by slug with cursor pages and reads one', async () => {
    const o = await createOrg(t);
    for (const slug of ['cc', 'aa', 'bb'])
      await t.http
        .post('/api/v1/agents')
        .set(...as(o, 'builder'))
        .send({ slug, name: slug })
        .expect(201);
    const first = await t.http
      .get('/api/v1/agents?limit=2')
      .set(...as(o, 'viewer'))
      .expect(200);
    expect(first.body.items.map((a: { slug: string }) => a.slug)).toEqual(['aa', 'bb']);
    const second = await t.http
      .get(`/api/v1/agents?limit=2&cursor=${first.body.nextCursor}`)
      .set(...as(o, 'viewer'))
      .expect(200);
    expect(second.body).toEqual({ items: [expect.objectContaining({ slug: 'cc' })], nextCursor: null });
    const one = await t.http
      .get(`/api/v1/agents/${first.body.items[0].id}`)
      .set(...as(o, 'viewer'))
      .expect(200);
    expect(one.body.slug).toBe('aa');
  });

  it('saves any well-shaped draft, even one that could not be published', async () => {
    const a = await t.http
      .post('/api/v1/agents')
      .set(...as(org, 'builder'))
      .send({ slug: 'drafty', name: 'Drafty' })
      .expect(201);
    const draft = {
      instructions: '# Be kind',
      capabilities: [{ id: 'no-such-capability', config: { anything: [1, 2] } }, { id: 'no-such-capability' }],
      resources: { knowledgeCollections: [randomUUID()], skills: [] },
      toolApproval: { whatever_tool: 'required' },
      toolOverrides: { whatever_tool: { name: 'not a valid name!', description: 'Custom' }, other: {} },
    };
    const res = await t.http
      .put(`/api/v1/agents/${a.body.id}/draft`)
      .set(...as(org, 'builder'))
      .send(draft)
      .expect(200);
    expect(res.body.draft).toEqual(draft);
    const read = await t.http
      .get(`/api/v1/agents/${a.body.id}`)
      .set(...as(org, 'viewer'))
      .expect(200);
    expect(read.body.draft).toEqual(draft);
    expect(read.body.latestVersion).toBeNull();
  });

  it('refuses a draft of the wrong shape, naming each field, and keeps the old draft', async () => {
    const a = await t.http
      .post('/api/v1/agents')
      .set(...as(org, 'builder'))
      .send({ slug: 'shape', name: 'Shape' })
      .expect(201);
    const res = await t.http
      .put(`/api/v1/agents/${a.body.id}/draft`)
      .set(...as(org, 'builder'))
      .send({
        instructions: 'x'.repeat(100_001),
        capabilities: [{ id: 'ok' }, { id: 5, config: 'nope', extra: true }],
        resources: { knowledgeCollections: ['not-a-uuid'], other: [] },
        toolApproval: { a: 'required', b: 'optional', c: true, ['__proto__']: 'x' },
        toolOverrides: { search: { name: 5, label: 'x' } },
        model: 'gpt',
      })
      .expect(400);
    expect(res.body.code).toBe('invalid_request');
    expect(pathsOf(res.body)).toEqual([
      'capabilities[1].config',
      'capabilities[1].extra',
      'capabilities[1].id',
      'instructions',
      'model',
      'resources.knowledgeCollections[0]',
      'resources.other',
      'toolApproval.__proto__',
      'toolApproval.b',
      'toolApproval.c',
      'toolOverrides.search.label',
      'toolOverrides.search.name',
    ]);
    // One problem per bad entry, each naming its key (Conventions).
    expect(res.body.errors.find((e: { path: string }) => e.path === 'toolApproval.b')).toEqual({
      path: 'toolApproval.b',
      code: 'isIn',
      message: 'toolApproval.b must be "required" (approval can only be made stricter)',
    });
    const missing = await t.http
      .put(`/api/v1/agents/${a.body.id}/draft`)
      .set(...as(org, 'builder'))
      .send({})
      .expect(400);
    expect(pathsOf(missing.body)).toEqual(['capabilities', 'instructions']);
    const arrays = await t.http
      .put(`/api/v1/agents/${a.body.id}/draft`)
      .set(...as(org, 'builder'))
      .send({ instructions: '', capabilities: [], toolApproval: ['required'], toolOverrides: [{ name: 'x' }] })
      .expect(400);
    expect(pathsOf(arrays.body)).toEqual(['toolApproval', 'toolOverrides']);
    const read = await t.http
      .get(`/api/v1/agents/${a.body.id}`)
      .set(...as(org, 'viewer'))
      .expect(200);
    expect(read.body.draft).toEqual({ instructions: '', capabilities: [] });
  });

  it('refuses null for an optional field of the spec (a wrong type), and keeps the old draft', async () => {
    // These were saved: `config: null` reached the stored draft, `resources: null` and the maps vanished.
    const a = await t.http
      .post('/api/v1/agents')
      .set(...as(org, 'builder'))
      .send({ slug: 'nulls', name: 'Nulls' })
      .expect(201);
    const res = await t.http
      .put(`/api/v1/agents/${a.body.id}/draft`)
      .set(...as(org, 'builder'))
      .send({ instructions: '', capabilities: [{ id: 'clock', config: null }], resources: null, toolApproval: null, toolOverrides: null })
      .expect(400);
    expect(res.body.code).toBe('invalid_request');
    expect(pathsOf(res.body)).toEqual(['capabilities[0].config', 'resources', 'toolApproval', 'toolOverrides']);
    const nested = await t.http
      .put(`/api/v1/agents/${a.body.id}/draft`)
      .set(...as(org, 'builder'))
      .send({
        instructions: '',
        capabilities: [],
        resources: { knowledgeCollections: null, skills: null },
        toolOverrides: { clock_now: { name: null, description: null } },
      })
      .expect(400);
    expect(pathsOf(nested.body)).toEqual([
      'resources.knowledgeCollections',
      'resources.skills',
      'toolOverrides.clock_now.description',
      'toolOverrides.clock_now.name',
    ]);
    const read = await t.http
      .get(`/api/v1/agents/${a.body.id}`)
      .set(...as(org, 'viewer'))
      .expect(200);
    expect(read.body.draft).toEqual({ instructions: '', capabilities: [] });
  });

  it('reports each problem of a list once, where it is: an object for a list is one isArray, a bad element is named by index', async () => {
    // An object for `capabilities` gave six entries, some at paths that do not exist (capabilities[0],
    // capabilities.id); bad elements were reported at the list's path, once per rule; a missing
    // name was also "longer than 200 characters".
    const a = await t.http
      .post('/api/v1/agents')
      .set(...as(org, 'builder'))
      .send({ slug: 'lists', name: 'Lists' })
      .expect(201);
    const put = (spec: object) =>
      t.http
        .put(`/api/v1/agents/${a.body.id}/draft`)
        .set(...as(org, 'builder'))
        .send({ instructions: '', capabilities: [], ...spec })
        .expect(400);
    const entries = (res: { body: { errors: { path: string; code: string }[] } }) => res.body.errors.map((e) => `${e.path} ${e.code}`);
    expect(entries(await put({ capabilities: { 0: { id: 'clock' } } }))).toEqual(['capabilities isArray']);
    expect(entries(await put({ mcpServers: { connection: 'x' } }))).toEqual(['mcpServers isArray']);
    const uuid = randomUUID();
    expect(entries(await put({ mcpServers: [{ connection: uuid, tools: ['a', '', 5, 'b'.repeat(129)] }] }))).toEqual([
      'mcpServers[0].tools[1] minLength',
      'mcpServers[0].tools[2] isString',
      'mcpServers[0].tools[3] maxLength',
    ]);
    const resources = await put({ resources: { skills: [uuid, 'nope', 7] } });
    expect(resources.body.errors).toEqual([
      { path: 'resources.skills[1]', code: 'isUuid', message: expect.stringMatching(/^resources\.skills\[1\] must be a UUID/) },
      { path: 'resources.skills[2]', code: 'isUuid', message: expect.any(String) },
    ]);
    const missing = await t.http
      .post('/api/v1/agents')
      .set(...as(org, 'builder'))
      .send({})
      .expect(400);
    expect(entries(missing).sort()).toEqual(['name isString', 'slug isString']);
  });

  it('refuses more than 500 toolOverrides or toolApproval entries, naming that limit, and takes 500', async () => {
    // 501 to 1000 entries were refused as "must be an object keyed by tool id", 1001 as "no more than 1000 entries".
    const a = await t.http
      .post('/api/v1/agents')
      .set(...as(org, 'builder'))
      .send({ slug: 'many-keys', name: 'Many keys' })
      .expect(201);
    const keyed = <T>(n: number, value: T) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`tool_${i}`, value]));
    const put = (spec: object) =>
      t.http
        .put(`/api/v1/agents/${a.body.id}/draft`)
        .set(...as(org, 'builder'))
        .send({ instructions: '', capabilities: [], ...spec });
    for (const n of [501, 1000, 1001]) {
      for (const [field, value] of [
        ['toolOverrides', {}],
        ['toolApproval', 'required'],
      ] as const) {
        const res = await put({ [field]: keyed(n, value) }).expect(400);
        expect(res.body.errors).toEqual([{ path: field, code: expect.any(String), message: `${field} has more than 500 entries` }]);
      }
    }
    await put({ toolOverrides: keyed(500, { name: 'x' }), toolApproval: keyed(500, 'required') }).expect(200);
  });

  it('accepts instructions of exactly 100,000 characters', async () => {
    const a = await t.http
      .post('/api/v1/agents')
      .set(...as(org, 'builder'))
      .send({ slug: 'long', name: 'Long' })
      .expect(201);
    await t.http
      .put(`/api/v1/agents/${a.body.id}/draft`)
      .set(...as(org, 'builder'))
      .send({ instructions: 'x'.repeat(100_000), capabilities: [] })
      .expect(200);
  });

  it("hides other organizations' agents and enforces roles", async () => {
    const a = await t.http
      .post('/api/v1/agents')
      .set(...as(org, 'builder'))
      .send({ slug: 'private', name: 'P' })
      .expect(201);
    const other = await createOrg(t);
    await t.http
      .get(`/api/v1/agents/${a.body.id}`)
      .set(...as(other, 'admin'))
      .expect(404);
    await t.http
      .put(`/api/v1/agents/${a.body.id}/draft`)
      .set(...as(other, 'admin'))
      .send({ instructions: '', capabilities: [] })
      .expect(404);
    const list = await t.http
      .get('/api/v1/agents')
      .set(...as(other, 'viewer'))
      .expect(200);
    expect(list.body.items.map((x: { id: string }) => x.id)).not.toContain(a.body.id);
    await t.http
      .get(`/api/v1/agents/${randomUUID()}`)
      .set(...as(org, 'viewer'))
      .expect(404);

    await t.http
      .post('/api/v1/agents')
      .set(...as(org, 'viewer'))
      .send({ slug: 'v', name: 'v' })
      .expect(403);
    await t.http
      .put(`/api/v1/agents/${a.body.id}/draft`)
      .set(...as(org, 'approver'))
      .send({ instructions: '', capabilities: [] })
      .expect(403);
    await t.http
      .put(`/api/v1/agents/${a.body.id}/draft`)
      .set(...as(org, 'agent'))
      .send({ instructions: '', capabilities: [] })
      .expect(403);
    await t.http
      .get('/api/v1/agents')
      .set(...as(org, 'agent'))
      .expect(403);
    await t.http
      .get('/api/v1/agents')
      .set(...bearer(t.adminToken))
      .expect(403);
    await t.http
      .put(`/api/v1/agents/${a.body.id}/draft`)
      .set(...as(org, 'admin'))
      .send({ instructions: 'ok', capabilities: [] })
      .expect(200);
  });

  it('documents the agent routes in OpenAPI', async () => {
    const doc = await t.http.get('/api/docs-json').expect(200);
    expect(doc.body.paths['/api/v1/agents'].post).toBeDefined();
    expect(doc.body.paths['/api/v1/agents/{agentId}/draft'].put.requestBody).toBeDefined();
    expect(doc.body.components.schemas.AgentSpecDto.properties.toolOverrides.additionalProperties).toEqual({ $ref: '#/components/schemas/ToolOverrideDto' });
    for (const p of ['/api/v1/knowledge/collections', '/api/v1/knowledge/collections/{id}/documents/{docId}', '/api/v1/skills/{id}']) {
      expect(doc.body.paths[p]).toBeDefined();
    }
  });
});

function pathsOf(problem: { errors: { path: string }[] }): string[] {
  return [...new Set(problem.errors.map((e) => e.path))].sort();
}
