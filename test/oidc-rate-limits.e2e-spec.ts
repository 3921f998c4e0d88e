import { TestIdentityProvider } from './support/oidc-provider';
import { bearer, createOrg, createTestApp, TestApp, TestOrg } from './support/test-app';

/**
 * Fuzz session 29, finding 1: requests the guard refuses (no role, a token scope that opens no door,
 * a role the route does not allow) counted against the organization's shared limit before they
 * were refused, so six signed-in people with no role made every key of their organization 429.
 * They count against the refused principal's own limit only.
 */
describe('rate limits of refused requests (e2e)', () => {
  let idp: TestIdentityProvider;
  let t: TestApp;
  const PER_KEY = 5;
  const PER_ORG = 8;

  beforeAll(async () => {
    idp = await TestIdentityProvider.start();
    t = await createTestApp({
      config: {
        oidc: idp.config({ keyRefreshCooldownMs: 30_000 }),
      },
    });
  });
  afterAll(async () => {
    await t.close();
    await idp.close();
  });

  async function freshOrg(): Promise<TestOrg> {
    Object.assign(t.config.rateLimit, { windowSeconds: 60, perKey: 0, perOrg: 0 });
    const org = await createOrg(t);
    // Limits are read per request: tightened once the organization is set up.
    Object.assign(t.config.rateLimit, { windowSeconds: 60, perKey: PER_KEY, perOrg: PER_ORG });
    return org;
  }
  const person = (org: TestOrg, claims: Record<string, unknown>) => idp.token({ claims: { org_id: org.id, ...claims } });

  /** Sends past its own limit: refused PER_KEY times with coherent headers, then 429 naming who. */
  async function exhaust(send: () => ReturnType<TestApp['http']['get']>, refusal: string, who: RegExp) {
    for (let i = 1; i <= PER_KEY; i++) {
      const res = await send();
      expect([res.status, res.body.code]).toEqual([403, refusal]);
      expect(res.headers['ratelimit-limit']).toBe(String(PER_KEY));
      expect(res.headers['ratelimit-remaining']).toBe(String(PER_KEY - i));
      expect(Number(res.headers['ratelimit-reset'])).toBeGreaterThan(0);
      expect(Number(res.headers['ratelimit-reset'])).toBeLessThanOrEqual(60);
    }
    const limited = await send();
    expect([limited.status, limited.body.code]).toEqual([429, 'rate_limited']);
    expect(limited.body.detail).toMatch(who);
    expect(limited.headers['ratelimit-remaining']).toBe('0');
    expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0);
  }

  /** The organization's whole shared budget is still there: PER_ORG requests of its keys, then 429. */
  async function expectOrgBudgetUntouched(org: TestOrg) {
    const keys = [org.keys.admin, org.keys.builder];
    for (let i = 0; i < PER_ORG; i++) {
      await t.http
        .get('/api/v1/agents')
        .set(...bearer(keys[i % 2]))
        .expect(200);
    }
    const res = await t.http
      .get('/api/v1/agents')
      .set(...bearer(org.keys.approver))
      .expect(429);
    expect(res.body.detail).toMatch(/organization/);
  }

  it('a person with no role sending past the organization limit is limited alone; the keys are still served', async () => {
    const org = await freshOrg();
    for (const sub of ['nobody-0', 'nobody-1']) {
      const token = await person(org, { sub, roles: [] });
      await exhaust(() => t.http.get('/api/v1/agents').set(...bearer(token)), 'forbidden', /signed-in person made too many/);
    }
    // GET /me, all they may call, draws on their own limit too, not the organization's.
    const third = await person(org, { sub: 'nobody-2', roles: [] });
    for (let i = 0; i < PER_KEY; i++) {
      await t.http
        .get('/api/v1/me')
        .set(...bearer(third))
        .expect(200);
    }
    await t.http
      .get('/api/v1/me')
      .set(...bearer(third))
      .expect(429);
    await expectOrgBudgetUntouched(org);
  });

  it('a token whose scope lacks api, on REST, is limited alone (an MCP client of an admin)', async () => {
    const org = await freshOrg();
    for (const sub of ['mcp-client-0', 'mcp-client-1']) {
      const token = await person(org, { sub, roles: ['admin'], scope: 'mcp:tools' });
      await exhaust(() => t.http.get('/api/v1/agents').set(...bearer(token)), 'insufficient_scope', /signed-in person/);
    }
    await expectOrgBudgetUntouched(org);
  });

  it('a key whose role does not allow the route (a viewer creating agents) is limited alone', async () => {
    const org = await freshOrg();
    await exhaust(
      () =>
        t.http
          .post('/api/v1/agents')
          .set(...bearer(org.keys.viewer))
          .send({ slug: 'nope', name: 'Nope' }),
      'forbidden',
      /API key made too many/,
    );
    await expectOrgBudgetUntouched(org);
  });
});
