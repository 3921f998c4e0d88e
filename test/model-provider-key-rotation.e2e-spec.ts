import { randomUUID } from 'node:crypto';
import { holdLookup, RunFixturesModule, runExecutions } from './fixtures/run-fixtures.module';
import { ScriptedModel, sequence, startScriptedModel } from './support/scripted-model';
import { bearer, createOrg, createTestApp, TestApp, TestOrg } from './support/test-app';
import { until } from './support/until';

/**
 * API.md "Models and runs", `PUT /model-providers/{id}/api-key`: a key rotated at the vendor
 * (leaked, expired) is stored in place of the old one and sent from the next model request on,
 * runs already under way included, against an OpenAI-compatible server on a loopback port.
 */
describe('model provider API key rotation (e2e)', () => {
  let t: TestApp;
  let model: ScriptedModel;
  let org: TestOrg;
  let other: TestOrg;
  let slugs = 0;

  beforeAll(async () => {
    model = await startScriptedModel(sequence({ text: 'unused' }));
    t = await createTestApp({ imports: [RunFixturesModule] });
    await t.app.listen(0, '127.0.0.1');
    org = await createOrg(t);
    other = await createOrg(t);
    // The embedded database starts slowly on a loaded machine.
  }, 180_000);
  afterAll(async () => {
    await t.close();
    await model.close();
  });

  const as = (role: keyof TestOrg['keys'], o: TestOrg = org) => bearer(o.keys[role]);

  async function provider(apiKey: string): Promise<string> {
    const res = await t.http
      .post('/api/v1/model-providers')
      .set(...as('admin'))
      .send({ name: `p-${++slugs}`, kind: 'openai-compatible', baseUrl: model.url, apiKey })
      .expect(201);
    return res.body.id;
  }

  async function agentOn(providerId: string): Promise<string> {
    const a = await t.http
      .post('/api/v1/agents')
      .set(...as('builder'))
      .send({ slug: `rot-${++slugs}`, name: `Rotation ${slugs}` })
      .expect(201);
    await t.http
      .put(`/api/v1/agents/${a.body.id}/draft`)
      .set(...as('builder'))
      .send({ instructions: 'x', capabilities: [{ id: 'fx-run-tools' }], model: { provider: providerId, name: 'scripted-1' } })
      .expect(200);
    await t.http
      .post(`/api/v1/agents/${a.body.id}/publish`)
      .set(...as('builder'))
      .expect(201);
    return a.body.id;
  }

  async function run(agentId: string): Promise<{ status: string }> {
    model.setScript(sequence({ text: 'done' }));
    const res = await t.http
      .post(`/api/v1/agents/${agentId}/runs`)
      .set(...as('agent'))
      .set('Prefer', 'wait=10')
      .send({ input: 'hi' })
      .expect(201);
    return res.body;
  }

  const setKey = (id: string, body: unknown, o: TestOrg = org, role: keyof TestOrg['keys'] = 'admin') =>
    t.http
      .put(`/api/v1/model-providers/${id}/api-key`)
      .set(...as(role, o))
      .send(body as object);

  it('is replaced: 200 without the key, hasApiKey, audited without it; the next run sends the new key', async () => {
    const id = await provider('sk-leaked-old-1111');
    const agentId = await agentOn(id);
    let from = model.authorizations.length;
    expect(await run(agentId)).toMatchObject({ status: 'succeeded' });
    expect(model.authorizations.slice(from)).toEqual(['Bearer sk-leaked-old-1111']);

    const res = await setKey(id, { apiKey: 'sk-rotated-new-2222' }).expect(200);
    expect(res.body).toEqual({ id, name: expect.any(String), kind: 'openai-compatible', baseUrl: model.url, hasApiKey: true, createdAt: expect.any(String) });
    expect(JSON.stringify(res.body)).not.toContain('sk-rotated');
    from = model.authorizations.length;
    expect(await run(agentId)).toMatchObject({ status: 'succeeded' });
    expect(model.authorizations.slice(from)).toEqual(['Bearer sk-rotated-new-2222']);

    const audit = await t.http
      .get('/api/v1/audit-events?type=model_provider.api_key_updated')
      .set(...as('admin'))
      .expect(200);
    expect(audit.body.items[0]).toMatchObject({
      actor: { type: 'api_key', id: org.keyIds.admin },
      target: { type: 'model_provider', id },
      data: { name: expect.any(String), hasApiKey: true },
    });
    const read = await t.http
      .get(`/api/v1/model-providers/${id}`)
      .set(...as('viewer'))
      .expect(200);
    expect(JSON.stringify([audit.body, read.body])).not.toMatch(/sk-rotated|sk-leaked/);
  });

  it('reaches a run already under way: its next model request sends the new key', async () => {
    const id = await provider('sk-midrun-old-3333');
    const agentId = await agentOn(id);
    const query = `held-${randomUUID()}`;
    const release = holdLookup(query);
    const from = model.authorizations.length;
    model.setScript(sequence({ toolCalls: [{ id: 'h1', name: 'lookup_order', arguments: JSON.stringify({ query }) }] }, { text: 'after the tool' }));
    const started = await t.http
      .post(`/api/v1/agents/${agentId}/runs`)
      .set(...as('agent'))
      .send({ input: 'look it up' })
      .expect(201);
    try {
      await until(
        async () => runExecutions.some((e) => e.args.query === query),
        (v) => v,
      );
      await setKey(id, { apiKey: 'sk-midrun-new-4444' }).expect(200);
    } finally {
      release();
    }
    const done = await until(
      async () =>
        (
          await t.http
            .get(`/api/v1/runs/${started.body.id}`)
            .set(...as('viewer'))
            .expect(200)
        ).body,
      (r) => r.status !== 'running',
    );
    expect(done).toMatchObject({ status: 'succeeded', output: 'after the tool' });
    expect(model.authorizations.slice(from)).toEqual(['Bearer sk-midrun-old-3333', 'Bearer sk-midrun-new-4444']);
  });

  it('null removes it: hasApiKey false, and the old key is no longer sent', async () => {
    const id = await provider('sk-removed-5555');
    const agentId = await agentOn(id);
    const res = await setKey(id, { apiKey: null }).expect(200);
    expect(res.body.hasApiKey).toBe(false);
    const from = model.authorizations.length;
    expect(await run(agentId)).toMatchObject({ status: 'succeeded' });
    expect(model.authorizations.slice(from)).toHaveLength(1);
    expect(model.authorizations[from] ?? '').not.toContain('sk-removed');
    const audit = await t.http
      .get('/api/v1/audit-events?type=model_provider.api_key_updated')
      .set(...as('admin'))
      .expect(200);
    expect(audit.body.items[0]).toMatchObject({ target: { id }, data: { hasApiKey: false } });
  });

  it.each([
    ['missing', {}, 'isString'],
    ['not a string', { apiKey: 42 }, 'isString'],
    ['empty', { apiKey: '' }, 'minLength'],
    ['too long', { apiKey: 'k'.repeat(4097) }, 'maxLength'],
    ['with a space', { apiKey: 'sk-has space-6666' }, 'matches'],
    ['with a line break', { apiKey: 'sk-x\r\nX-Injected: 1' }, 'matches'],
  ])('400 at apiKey when it is %s, storing nothing and echoing nothing', async (_what, body, code) => {
    const id = await provider('sk-kept-7777');
    const res = await setKey(id, body).expect(400);
    expect(res.body.code).toBe('invalid_request');
    expect(res.body.errors).toContainEqual(expect.objectContaining({ path: 'apiKey', code }));
    expect(res.body.errors.every((e: { path: string }) => e.path === 'apiKey')).toBe(true);
    expect(JSON.stringify(res.body)).not.toContain('has space');
    expect(JSON.stringify(res.body)).not.toContain('Injected');
    const agentId = await agentOn(id);
    const from = model.authorizations.length;
    await run(agentId);
    expect(model.authorizations.slice(from)).toEqual(['Bearer sk-kept-7777']);
  });

  it('an unknown property is 400; a viewer or builder is 403; another organization gets 404 and changes nothing', async () => {
    const id = await provider('sk-owned-8888');
    expect((await setKey(id, { apiKey: 'sk-x-123456', extra: 1 }).expect(400)).body.errors).toEqual([expect.objectContaining({ path: 'extra' })]);
    await setKey(id, { apiKey: 'sk-viewer-9999' }, org, 'viewer').expect(403);
    await setKey(id, { apiKey: 'sk-builder-9999' }, org, 'builder').expect(403);
    await setKey(id, { apiKey: 'sk-intruder-9999' }, other).expect(404);
    await setKey(randomUUID(), { apiKey: 'sk-nobody-9999' }).expect(404);
    const agentId = await agentOn(id);
    const from = model.authorizations.length;
    await run(agentId);
    expect(model.authorizations.slice(from)).toEqual(['Bearer sk-owned-8888']);
  });
});
