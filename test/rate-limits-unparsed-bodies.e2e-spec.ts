import { bearer, createOrg, createTestApp, publishAgent, TestApp, TestOrg } from './support/test-app';

/**
 * The rate limits were counted in the guard, which runs once the body is parsed: a key's request
 * whose body failed to parse was answered `400` by the parser and never counted. A builder key
 * limited to 5 requests a minute had 100 bodies of a megabyte read and parsed in 1.7 s, all `400`,
 * its limit untouched (`RateLimit-Remaining` 4 after), and went on past it (attack round 20, AB-F4).
 * A request with a body is now counted before its body is read, and past a limit refused unread.
 */
describe('rate limits on requests whose body is never parsed', () => {
  let t: TestApp;
  let org: TestOrg;
  let other: TestOrg;
  let third: TestOrg;
  let agent: string;
  let pinned: string;
  // Unterminated: JSON.parse fails at its end, having read all of it.
  const unparsable = `{"slug":"${'a'.repeat(200_000)}"`;

  beforeAll(async () => {
    t = await createTestApp();
    org = await createOrg(t);
    other = await createOrg(t);
    third = await createOrg(t);
    agent = await publishAgent(t, org, 'one', { instructions: 'x', capabilities: [] });
    const theirs = await publishAgent(t, org, 'two', { instructions: 'x', capabilities: [] });
    pinned = (
      await t.http
        .post(`/api/v1/orgs/${org.id}/api-keys`)
        .set(...bearer(org.keys.admin))
        .send({ name: 'pinned runtime', roles: ['agent'], agentIds: [theirs] })
        .expect(201)
    ).body.token;
    // Limits are read per request, so they can be tightened after set-up.
    Object.assign(t.config.rateLimit, { windowSeconds: 60, perKey: 5, perOrg: 8, authFailures: 3 });
  });
  afterAll(() => t.close());

  const postUnparsable = (token: string, path = '/api/v1/agents') =>
    t.http
      .post(path)
      .set(...bearer(token))
      .set('content-type', 'application/json')
      .send(unparsable);

  it("counts a key's bodies that fail to parse, against it and its organization, and past its limit refuses them unread", async () => {
    for (let i = 0; i < 5; i++) expect((await postUnparsable(org.keys.builder)).status).toBe(400);
    // Was 400: the body read and parsed again, the limit never reached.
    const refused = await postUnparsable(org.keys.builder);
    expect(refused.status).toBe(429);
    expect(refused.body.code).toBe('rate_limited');
    expect(refused.headers.connection).toBe('close');
    // Was 200: none of the five had counted.
    await t.http
      .get('/api/v1/me')
      .set(...bearer(org.keys.builder))
      .expect(429);
    // The organization's limit (8) holds the five too: three more of another key, then 429.
    for (let i = 0; i < 3; i++)
      await t.http
        .get('/api/v1/agents')
        .set(...bearer(org.keys.viewer))
        .expect(200);
    await t.http
      .get('/api/v1/agents')
      .set(...bearer(org.keys.viewer))
      .expect(429);
    // Another organization is untouched.
    await t.http
      .get('/api/v1/me')
      .set(...bearer(other.keys.viewer))
      .expect(200);
  });

  it('counts a body the guard then sees once, not again in the guard: five requests of a key limited to five are served', async () => {
    for (let i = 0; i < 5; i++) {
      const res = await t.http
        .post('/api/v1/agents')
        .set(...bearer(third.keys.builder))
        .send({});
      // Parsed, through the guard, refused by validation.
      expect(res.status).toBe(400);
      expect(res.headers['ratelimit-remaining']).toBe(String(4 - i));
    }
    expect(
      (
        await t.http
          .post('/api/v1/agents')
          .set(...bearer(third.keys.builder))
          .send({})
      ).status,
    ).toBe(429);
  });

  it("refuses a pinned key's body for another agent unread, as the guard would (404), counted against the key alone", async () => {
    for (let i = 0; i < 5; i++) {
      const res = await postUnparsable(pinned, `/api/v1/agents/${agent}/tool-calls`);
      // Was 400: the body was read and parsed before the guard answered the agent as missing.
      expect(res.status).toBe(404);
      expect(res.body.code).toBe('not_found');
    }
    expect((await postUnparsable(pinned, `/api/v1/agents/${agent}/tool-calls`)).status).toBe(429);
    // Not against its organization's: other's keys are untouched, and so is this organization's count (already at 8: 429 as before).
    await t.http
      .get('/api/v1/me')
      .set(...bearer(other.keys.admin))
      .expect(200);
  });
});
