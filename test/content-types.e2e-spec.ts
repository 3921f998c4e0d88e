import { bearer, createOrg, createTestApp, TestApp, TestOrg } from './support/test-app';

/** API.md "Conventions": JSON in and out; what is not JSON is refused before any route reads it. */
describe('request content types (e2e)', () => {
  let t: TestApp;
  let org: TestOrg;
  beforeAll(async () => {
    t = await createTestApp();
    org = await createOrg(t);
  });
  afterAll(() => t.close());
  const skill = { name: 'triage', description: 'When to triage.', instructions: 'Triage.' };

  it('reads JSON, whatever the case of its media type or its charset', async () => {
    for (const type of ['application/json', 'application/json; charset=utf-8', 'Application/JSON']) {
      await t.http
        .post('/api/v1/skills')
        .set(...bearer(org.keys.builder))
        .set('Content-Type', type)
        .send(JSON.stringify(skill))
        .expect(201);
    }
  });

  it('answers a body that is not JSON with 415 unsupported_media_type', async () => {
    // A text/plain body was parsed as a string and refused field by field (400).
    for (const [type, body] of [
      ['text/plain', 'name=triage'],
      ['application/x-www-form-urlencoded', 'name=triage'],
      ['application/xml', '<skill/>'],
    ]) {
      const res = await t.http
        .post('/api/v1/skills')
        .set(...bearer(org.keys.builder))
        .set('Content-Type', type)
        .send(body)
        .expect(415);
      expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(res.body.code).toBe('unsupported_media_type');
    }
  });

  it('takes an empty body sent as JSON on a route that reads none, and refuses it field by field on one that does', async () => {
    // Clients that set Content-Type: application/json on every POST were refused 400 on publish.
    const a = await t.http
      .post('/api/v1/agents')
      .set(...bearer(org.keys.builder))
      .send({ slug: 'empty-body', name: 'Empty body' })
      .expect(201);
    const json = (path: string) =>
      t.http
        .post(path)
        .set(...bearer(org.keys.builder))
        .set('Content-Type', 'application/json');
    await json(`/api/v1/agents/${a.body.id}/draft/validate`).expect(200);
    await json(`/api/v1/agents/${a.body.id}/publish`).expect(201);
    const refused = await json('/api/v1/skills').expect(400);
    expect(refused.body.code).toBe('invalid_request');
    expect(refused.body.errors.map((e: { path: string }) => e.path)).toEqual(expect.arrayContaining(['name', 'description', 'instructions']));
  });
});
