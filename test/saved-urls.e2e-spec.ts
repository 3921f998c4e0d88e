import { DataSource } from 'typeorm';
import { bearer, createOrg, createTestApp, TestApp, TestOrg } from './support/test-app';

/**
 * API.md "Secrets and outbound connections": a URL the egress policy refuses is `422 egress_refused`
 * when it is saved. Every route that saves one answers the same URL alike, at its field: webhooks
 * (`url`), model providers (`baseUrl`) and MCP connections (`url`) had three answers between them
 * for credentials in a URL, odd IPv4 spellings, a host ending in a dot and port 0, and saved the
 * last two as webhooks that then failed every delivery.
 */
const ROUTES = [
  { path: '/api/v1/webhooks', field: 'url', body: (url: string) => ({ url, types: ['*'] }) },
  { path: '/api/v1/model-providers', field: 'baseUrl', body: (url: string) => ({ name: 'saved', kind: 'openai-compatible', baseUrl: url }) },
  { path: '/api/v1/mcp-connections', field: 'url', body: (url: string) => ({ server: 'remote', name: 'saved', url }) },
];

const INVALID = [400, 'invalid_request', 'url'] as const;
const REFUSED = [422, 'egress_refused', 'egress_refused'] as const;

/** Only `localhost` is allowed: 127.0.0.1 however it is spelled must be refused. */
const TABLE: Array<[string, readonly [number, string, string]]> = [
  ['not a url', INVALID],
  ['/relative/path', INVALID],
  ['http://local host:4122/', INVALID],
  ['http://localhost:4122/ x', INVALID],
  [' http://localhost:4122/', INVALID],
  ['http://local\thost:4122/', INVALID],
  ['http://localhost.:4122/', INVALID],
  ['http://localhost%2e:4122/', INVALID],
  ['https://example.com./', INVALID],
  ['https://localhost:0/', INVALID],
  ['https://example.com:0/', INVALID],
  // Names DNS cannot carry: getaddrinfo's EINVAL answered 500 (attack round 11, F-F1); a long label was saved.
  [`https://${`${'a'.repeat(63)}.`.repeat(4)}com/`, INVALID],
  [`https://${'a'.repeat(64)}.com/`, INVALID],
  // 252 characters as given, 2,092 as sent: each U+4E00 is `%E4%B8%80`. Every route saved it, and a webhook of 2,048
  // such characters was stored, answered and sent as 18,248 (attack round 20, AA-F3).
  [`http://localhost:4122/${'\u4e00'.repeat(230)}`, INVALID],
  ['http://user:pw@localhost:4122/', REFUSED],
  ['https://token@example.com/', REFUSED],
  ['ftp://localhost/', REFUSED],
  ['file:///etc/passwd', REFUSED],
  ['http://example.com/', REFUSED],
  ['http://127.0.0.1:4122/', REFUSED],
  ['http://2130706433:4122/', REFUSED],
  ['http://0x7f.1:4122/', REFUSED],
  ['http://0177.0.0.1:4122/', REFUSED],
  ['http://127.1:4122/', REFUSED],
  ['https://127.0.0.1.:4122/', REFUSED],
  ['https://[::ffff:127.0.0.1]:4122/', REFUSED],
  ['https://[::ffff:0:7f00:1]:4122/', REFUSED],
  ['https://[64:ff9b:1::7f00:1]:4122/', REFUSED],
  ['https://169.254.169.254/latest/meta-data', REFUSED],
];

describe('saving a URL: one answer on every route (e2e)', () => {
  let t: TestApp;
  let org: TestOrg;
  let ds: DataSource;

  beforeAll(async () => {
    t = await createTestApp({ config: { egress: { allowedHosts: ['localhost'], connectTimeoutMs: 2000, requestTimeoutMs: 5000 } } });
    org = await createOrg(t, ['mcp:remote']);
    ds = t.app.get(DataSource);
  }, 240_000);
  afterAll(async () => {
    await t.close();
  });

  const stored = async () =>
    ds.query(
      `SELECT (SELECT count(*) FROM webhook_endpoint)::int AS webhooks, (SELECT count(*) FROM model_provider)::int AS providers,
              (SELECT count(*) FROM mcp_connection)::int AS connections`,
    );

  it.each(TABLE)('%j is answered alike by webhooks, model providers and MCP connections', async (url, expected) => {
    const before = await stored();
    const answers = [];
    for (const route of ROUTES) {
      const res = await t.http
        .post(route.path)
        .set(...bearer(org.keys.admin))
        .send(route.body(url));
      answers.push([route.path, res.status, res.body.code, res.body.errors?.[0]?.path, res.body.errors?.[0]?.code]);
    }
    expect(answers).toEqual(ROUTES.map((route) => [route.path, expected[0], expected[1], route.field, expected[2]]));
    expect(await stored()).toEqual(before);
  });

  it('a URL each route may save is still saved', async () => {
    await t.http
      .post('/api/v1/webhooks')
      .set(...bearer(org.keys.admin))
      .send({ url: 'http://localhost:4122/hook#frag', types: ['*'] })
      .expect(201)
      .expect((res) => expect(res.body.url).toBe('http://localhost:4122/hook'));
    await t.http
      .post('/api/v1/model-providers')
      .set(...bearer(org.keys.admin))
      .send({ name: 'local', kind: 'openai-compatible', baseUrl: 'http://localhost:4123/v1' })
      .expect(201);
  });
});
