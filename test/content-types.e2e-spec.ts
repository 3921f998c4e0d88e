import { gzipSync } from 'node:zlib';
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

  const post = (type: string, body: Buffer | string, headers: Record<string, string> = {}) =>
    t.http
      .post('/api/v1/skills')
      .set(...bearer(org.keys.builder))
      .set({ 'Content-Type': type, ...headers })
      // The bytes as given: superagent would serialize a Buffer as JSON.
      .serialize((b: Buffer | string) => b as string)
      .send(body);
  const skillsDescribed = async (description: string) =>
    (
      await t.http
        .get('/api/v1/skills?limit=200')
        .set(...bearer(org.keys.builder))
        .expect(200)
    ).body.items.filter((s: { description: string }) => s.description === description);

  it('answers a JSON body declared in a charset other than UTF-8 with 415, and stores nothing', async () => {
    // The body was decoded as UTF-8 anyway: "café" in ISO-8859-1 was stored as "caf\ufffd".
    const latin1 = Buffer.concat([Buffer.from('{"name":"triage","description":"caf'), Buffer.from([0xe9]), Buffer.from('","instructions":"x"}')]);
    for (const [type, body] of [
      ['application/json; charset=iso-8859-1', latin1],
      ['application/json; charset="UTF-16"', Buffer.from(JSON.stringify({ ...skill, description: 'utf16' }), 'utf16le')],
    ] as const) {
      const res = await post(type, body).expect(415);
      expect(res.body).toMatchObject({ code: 'unsupported_media_type', errors: [{ path: 'Content-Type', code: 'unsupported_charset' }] });
    }
    expect(await skillsDescribed('caf\ufffd')).toEqual([]);
    expect(await skillsDescribed('utf16')).toEqual([]);
  });

  it('refuses bytes that are not UTF-8 with 400 instead of storing U+FFFD; UTF-8, however labelled, is kept intact', async () => {
    const bad = Buffer.concat([Buffer.from('{"name":"triage","description":"bad'), Buffer.from([0xff, 0xfe]), Buffer.from('","instructions":"x"}')]);
    const res = await post('application/json', bad).expect(400);
    expect(res.body).toMatchObject({ code: 'invalid_request', errors: [{ path: '', code: 'invalid_utf8' }] });
    expect(await skillsDescribed('bad\ufffd\ufffd')).toEqual([]);
    for (const type of ['application/json; charset="UTF-8"', 'application/json;charset=utf8']) {
      const ok = await post(type, Buffer.from(JSON.stringify({ ...skill, description: 'café 🙂' }), 'utf8')).expect(201);
      expect(ok.body.description).toBe('café 🙂');
    }
  });

  it('answers a body with a Content-Encoding other than identity with 415 naming the header, before anything runs', async () => {
    // A plain body labelled gzip was executed; a real gzip body was "not valid JSON".
    const plain = JSON.stringify({ ...skill, description: 'declared gzip, sent plain' });
    for (const [encoding, body] of [
      ['gzip', plain],
      ['gzip', gzipSync(Buffer.from(JSON.stringify({ ...skill, description: 'really gzip' })))],
      ['br', plain],
      ['identity, gzip', plain],
    ] as const) {
      const res = await post('application/json', body, { 'Content-Encoding': encoding }).expect(415);
      expect(res.headers['accept-encoding']).toBe('identity');
      expect(res.body).toMatchObject({ code: 'unsupported_media_type', errors: [{ path: 'Content-Encoding', code: 'unsupported_encoding' }] });
    }
    expect(await skillsDescribed('declared gzip, sent plain')).toEqual([]);
    expect(await skillsDescribed('really gzip')).toEqual([]);
    await post('application/json', JSON.stringify({ ...skill, description: 'identity' }), { 'Content-Encoding': 'Identity' }).expect(201);
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
