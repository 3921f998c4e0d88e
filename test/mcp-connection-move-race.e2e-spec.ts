import { FixtureMcpServer, startFixtureMcpServer } from './support/mcp-fixture-server';
import { bearer, createOrg, createTestApp, TestApp, TestOrg } from './support/test-app';
import { until } from './support/until';

/**
 * Attack round 14, O-F1: a move to another origin is allowed without credentials only while the
 * connection stores none (row 86). That was judged when the move began, and the server at the new
 * address lists its tools for as long as it likes: credentials stored meanwhile (an admin adding
 * the vendor's token) stayed on the row the move then pointed at the new origin, and went there.
 */
describe('MCP connections: credentials stored while a move lists the new address (e2e)', () => {
  let t: TestApp;
  let org: TestOrg;
  let vendor: FixtureMcpServer;
  let elsewhere: FixtureMcpServer;

  beforeAll(async () => {
    t = await createTestApp({ config: { toolTimeoutMs: 5000 } });
    org = await createOrg(t, ['mcp:remote']);
    vendor = await startFixtureMcpServer({});
    elsewhere = await startFixtureMcpServer({});
  }, 240_000);
  afterAll(async () => {
    await vendor.close();
    await elsewhere.close();
    await t.close();
  });

  const admin = () => bearer(org.keys.admin);
  const create = async (name: string, credentials?: Record<string, string>) =>
    (
      await t.http
        .post('/api/v1/mcp-connections')
        .set(...admin())
        .send({ server: 'remote', name, url: vendor.url, ...(credentials && { credentials }) })
        .expect(201)
    ).body.id as string;

  /** Starts a move of `id` to `elsewhere` that waits in its listing there, and runs `meanwhile` then. */
  async function moveAround(id: string, meanwhile: () => Promise<void>, body: Record<string, unknown> = {}) {
    elsewhere.state.listDelayMs = 1500;
    try {
      const asked = elsewhere.listRequests.length;
      const moving = t.http
        .put(`/api/v1/mcp-connections/${id}/url`)
        .set(...admin())
        .send({ url: elsewhere.url, ...body })
        .then((res) => res);
      await until(
        async () => elsewhere.listRequests.length,
        (n) => n > asked,
      );
      await meanwhile();
      return await moving;
    } finally {
      elsewhere.state.listDelayMs = undefined;
    }
  }

  it('refuses the move (409) when credentials were stored while it listed: the token never reaches the other origin', async () => {
    const id = await create('public');
    const heard = elsewhere.authorizations.length;
    const moved = await moveAround(id, async () => {
      const set = await t.http
        .put(`/api/v1/mcp-connections/${id}/credentials`)
        .set(...admin())
        .send({ credentials: { authorization: 'Bearer vendor-secret-Q7w2' } })
        .expect(200);
      expect(set.body.url).toBe(vendor.url);
    });
    expect(moved.status).toBe(409);
    expect(moved.body).toMatchObject({ code: 'conflict', errors: [expect.objectContaining({ path: 'credentials' })] });
    const now = (
      await t.http
        .get(`/api/v1/mcp-connections/${id}`)
        .set(...admin())
        .expect(200)
    ).body;
    expect(now).toMatchObject({ url: vendor.url, credentialNames: ['authorization'] });
    await t.http
      .post(`/api/v1/mcp-connections/${id}/sync`)
      .set(...admin())
      .expect(200);
    expect(elsewhere.authorizations.slice(heard)).not.toContain('Bearer vendor-secret-Q7w2');
    expect(vendor.authorizations.at(-1)).toBe('Bearer vendor-secret-Q7w2');
  });

  it('still moves when nothing changed meanwhile, and when the move gives its own credentials', async () => {
    const id = await create('plain');
    expect((await moveAround(id, async () => undefined)).status).toBe(200);
    const keyed = await create('keyed', { authorization: 'Bearer old-place-Hq1' });
    const given = await moveAround(
      keyed,
      async () => {
        await t.http
          .put(`/api/v1/mcp-connections/${keyed}/credentials`)
          .set(...admin())
          .send({ credentials: { authorization: 'Bearer rotated-Hq2' } })
          .expect(200);
      },
      { credentials: { authorization: 'Bearer new-place-Hq3' } },
    );
    expect(given.status).toBe(200);
    expect(given.body).toMatchObject({ url: elsewhere.url, credentialNames: ['authorization'] });
    expect(elsewhere.authorizations).not.toContain('Bearer rotated-Hq2');
    expect(elsewhere.authorizations).not.toContain('Bearer old-place-Hq1');
  });
});
