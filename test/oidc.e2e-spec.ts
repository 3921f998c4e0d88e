import { discoverOAuthProtectedResourceMetadata, extractWWWAuthenticateParams } from '@modelcontextprotocol/client';
import fc from 'fast-check';
import { generateKeyPair, SignJWT, UnsecuredJWT } from 'jose';
import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { McpFixturesModule } from './fixtures/mcp-fixtures.module';
import { TestIdentityProvider } from './support/oidc-provider';
import { sequence, startScriptedModel } from './support/scripted-model';
import { stopAtEventStream, walkRoutes } from './support/routes';
import { SseClient } from './support/sse-client';
import { bearer, createOrg, createTestApp, TestApp, TestOrg } from './support/test-app';
import { createWorld, fillPath, validBody } from './support/world';

const KEY_REFRESH_COOLDOWN_MS = 300;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Issue 20, API.md "Identity providers": a JWT access token of the organization's identity
 * provider is a bearer token beside API keys. The provider runs on a loopback port inside the
 * test (its own keys, discovery document and JWKS); the app reaches it through the egress policy.
 */
describe('sign-in through an identity provider (e2e)', () => {
  let idp: TestIdentityProvider;
  let t: TestApp;
  let base: string;
  let a: TestOrg;
  let b: TestOrg;
  let agentA: string;
  let agentB: string;

  beforeAll(async () => {
    idp = await TestIdentityProvider.start();
    t = await createTestApp({
      imports: [McpFixturesModule],
      config: {
        oidc: idp.config({ keyRefreshCooldownMs: KEY_REFRESH_COOLDOWN_MS }),
      },
    });
    await t.app.listen(0, '127.0.0.1');
    base = await t.app.getUrl();
    [a, b] = [await createOrg(t), await createOrg(t)];
    agentA = await publishedAgent(a);
    agentB = await publishedAgent(b);
  });
  afterAll(async () => {
    await t.close();
    await idp.close();
  });

  let slugs = 0;
  async function publishedAgent(o: TestOrg): Promise<string> {
    const agent = await t.http
      .post('/api/v1/agents')
      .set(...bearer(o.keys.builder))
      .send({ slug: `oidc-${++slugs}`, name: `Notes ${slugs}` })
      .expect(201);
    await t.http
      .put(`/api/v1/agents/${agent.body.id}/draft`)
      .set(...bearer(o.keys.builder))
      .send({ instructions: 'Keep notes.', capabilities: [{ id: 'fx-mcp-notes' }], toolOverrides: { 'fx-mcp-search': { name: 'search_notes' } } })
      .expect(200);
    await t.http
      .post(`/api/v1/agents/${agent.body.id}/publish`)
      .set(...bearer(o.keys.builder))
      .expect(201);
    return agent.body.id;
  }

  /** A token of a person of `org` (named by its id unless told otherwise) with these roles. */
  const person = (org: TestOrg, roles: string[], claims: Record<string, unknown> = {}) => idp.token({ claims: { org_id: org.id, roles, ...claims } });
  const mcpUrl = (agent: string) => new URL(`${base}/api/v1/agents/${agent}/mcp`);
  const metadataUrl = (agent: string) => `${base}/.well-known/oauth-protected-resource/api/v1/agents/${agent}/mcp`;

  function expectUnauthorized(res: { status: number; headers: Record<string, string>; body: { code?: string } }) {
    expect(res.status).toBe(401);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(res.body.code).toBe('unauthorized');
  }

  describe('REST', () => {
    it('lets valid tokens of two organizations see only their own agents (the org claim by id or by slug)', async () => {
      const tokenA = await person(a, ['viewer']);
      const tokenB = await person(b, ['viewer'], { org_id: b.slug });
      const seenByA = await t.http
        .get('/api/v1/agents')
        .set(...bearer(tokenA))
        .expect(200);
      const seenByB = await t.http
        .get('/api/v1/agents')
        .set(...bearer(tokenB))
        .expect(200);
      expect(seenByA.body.items.map((x: { id: string }) => x.id)).toEqual([agentA]);
      expect(seenByB.body.items.map((x: { id: string }) => x.id)).toEqual([agentB]);
      await t.http
        .get(`/api/v1/agents/${agentB}`)
        .set(...bearer(tokenA))
        .expect(404);
      await t.http
        .get(`/api/v1/orgs/${b.id}`)
        .set(...bearer(tokenA))
        .expect(404);
      await t.http
        .get(`/api/v1/orgs/${a.id}`)
        .set(...bearer(tokenA))
        .expect(200);
    });

    it('shows the principal on GET /me: type oidc, the subject, the organization, only known roles', async () => {
      const sub = `alice-${randomUUID()}`;
      const token = await person(a, ['builder', 'superuser', 'viewer'], { sub });
      const me = await t.http
        .get('/api/v1/me')
        .set(...bearer(token))
        .expect(200);
      // When the token stops being accepted: its exp and the 60 s of clock skew the test provider allows.
      const { exp } = JSON.parse(Buffer.from(token.split('.')[1], 'base64url').toString()) as { exp: number };
      expect(me.body).toEqual({ type: 'oidc', id: sub, orgId: a.id, roles: ['viewer', 'builder'], expiresAt: new Date((exp + 60) * 1000).toISOString() });
    });

    it('respects roles (a viewer cannot create agents) and names the subject as the audit actor', async () => {
      const viewer = await person(a, ['viewer']);
      const refused = await t.http
        .post('/api/v1/agents')
        .set(...bearer(viewer))
        .send({ slug: 'by-viewer', name: 'No' })
        .expect(403);
      expect(refused.body.code).toBe('forbidden');
      const sub = `builder-${randomUUID()}`;
      const builder = await person(a, ['builder'], { sub });
      const created = await t.http
        .post('/api/v1/agents')
        .set(...bearer(builder))
        .send({ slug: 'by-builder', name: 'Yes' })
        .expect(201);
      const audit = await t.http
        .get('/api/v1/audit-events?type=agent.created')
        .set(...bearer(a.keys.admin))
        .expect(200);
      const event = audit.body.items.find((e: { target: { id: string } }) => e.target.id === created.body.id);
      expect(event.actor).toEqual({ type: 'oidc', id: sub });
      // A token with no role the product knows may only say who it is.
      const nobody = await person(a, ['owner']);
      await t.http
        .get('/api/v1/agents')
        .set(...bearer(nobody))
        .expect(403);
      expect(
        (
          await t.http
            .get('/api/v1/me')
            .set(...bearer(nobody))
            .expect(200)
        ).body.roles,
      ).toEqual([]);
    });

    it('a token with no role the product knows may call GET /me and nothing else: every other route of the router answers 403', async () => {
      // Objects that exist, so a route that would answer 404 for a made-up id is asked about a real one.
      const world = await createWorld(t, [], 'roleless');
      const tokens = [
        await person(world.org, []),
        await person(world.org, ['owner', 'superuser']),
        // The org claim by slug, as a provider may name it.
        await person(world.org, [], { org_id: world.org.slug }),
      ];
      const diffs: string[] = [];
      const routes = walkRoutes(t).filter((r) => r.access !== 'public');
      expect(routes.length).toBeGreaterThan(50);
      for (const token of tokens) {
        for (const route of routes) {
          const key = `${route.method} ${route.path}`;
          let req = t.http[route.method.toLowerCase() as 'get'](fillPath(route.path, world.ids, randomUUID))
            .parse(stopAtEventStream)
            .set(...bearer(token));
          const { known, body } = validBody(route.method, route.path);
          if (route.method !== 'GET' && route.method !== 'DELETE' && body !== undefined)
            req = req.set('Accept', 'application/json, text/event-stream').send(body as object);
          else if (route.method !== 'GET' && route.method !== 'DELETE' && !known) req = req.send({});
          const res = await req;
          const want = key === 'GET /api/v1/me' ? 200 : 403;
          if (res.status !== want || (want === 403 && res.body?.code !== 'forbidden')) diffs.push(`${key}: ${res.status} ${res.body?.code ?? ''}`);
        }
      }
      expect(diffs).toEqual([]);
      // What the finding named, with the organization the token names: its own.
      const me = await t.http
        .get('/api/v1/me')
        .set(...bearer(tokens[0]))
        .expect(200);
      expect(me.body).toMatchObject({ type: 'oidc', orgId: world.org.id, roles: [] });
    });

    it('keeps API keys working beside it', async () => {
      const res = await t.http
        .get('/api/v1/agents')
        .set(...bearer(a.keys.viewer))
        .expect(200);
      expect(res.body.items.map((x: { id: string }) => x.id)).toContain(agentA);
      expect(
        (
          await t.http
            .get('/api/v1/me')
            .set(...bearer(a.keys.viewer))
            .expect(200)
        ).body.type,
      ).toBe('api_key');
    });

    it('refuses an org claim that names two organizations (a UUID-shaped slug stored before such slugs were refused)', async () => {
      const [shadowId, loneId, loneSlug] = [randomUUID(), randomUUID(), randomUUID()];
      // Written directly: POST /orgs refuses such slugs now.
      const db = t.app.get(DataSource);
      await db.query(`INSERT INTO org (id, slug, name, scopes) VALUES ($1, $2, 'Shadow', '{}'), ($3, $4, 'Lone', '{}')`, [shadowId, a.id, loneId, loneSlug]);
      try {
        expectUnauthorized(await t.http.get('/api/v1/me').set(...bearer(await person(a, ['viewer']))));
        // A UUID-shaped slug that names one organization still reaches it.
        const lone = await t.http
          .get('/api/v1/me')
          .set(...bearer(await person(a, ['viewer'], { org_id: loneSlug })))
          .expect(200);
        expect(lone.body.orgId).toBe(loneId);
      } finally {
        await db.query(`DELETE FROM org WHERE id = ANY($1)`, [[shadowId, loneId]]);
      }
      const again = await t.http
        .get('/api/v1/me')
        .set(...bearer(await person(a, ['viewer'])))
        .expect(200);
      expect(again.body.orgId).toBe(a.id);
    });

    it.each([
      ['a bad signature', async () => idp.token({ claims: { org_id: a.id, roles: ['viewer'] }, key: (await generateKeyPair('RS256')).privateKey })],
      ['the wrong audience', () => person(a, ['viewer'], { aud: 'https://someone-else.example.com' })],
      ['the wrong issuer', () => person(a, ['viewer'], { iss: 'https://login.example.com' })],
      ['an expiry past the clock skew', () => idp.token({ claims: { org_id: a.id, roles: ['viewer'] }, expiresIn: -120 })],
      ['an unknown organization (id)', () => person(a, ['viewer'], { org_id: randomUUID() })],
      ['an unknown organization (slug)', () => person(a, ['viewer'], { org_id: 'no-such-org' })],
      ['no organization', () => person(a, ['viewer'], { org_id: undefined })],
      ['no subject', () => person(a, ['viewer'], { sub: undefined })],
      ['a subject with C1 controls and a bidi override', () => person(a, ['viewer'], { sub: 'mallory\u0085\u009b31m\u202eadmin' })],
      [
        'alg none',
        () =>
          Promise.resolve(
            new UnsecuredJWT({ org_id: a.id, roles: ['admin'], sub: 'x' }).setIssuer(idp.issuer).setAudience(idp.audience).setExpirationTime('5m').encode(),
          ),
      ],
      [
        'HS256 (a symmetric algorithm)',
        () =>
          new SignJWT({ org_id: a.id, roles: ['admin'], sub: 'x' })
            .setProtectedHeader({ alg: 'HS256', kid: idp.currentKid })
            .setIssuer(idp.issuer)
            .setAudience(idp.audience)
            .setExpirationTime('5m')
            .sign(new TextEncoder().encode('x'.repeat(32))),
      ],
      ['an unknown kid', () => idp.token({ claims: { org_id: a.id, roles: ['viewer'] }, kid: 'nobody-published-this' })],
    ])('refuses a token with %s: 401 with a problem document', async (_why, make) => {
      const res = await t.http.get('/api/v1/agents').set(...bearer(await make()));
      expectUnauthorized(res);
      expect(res.headers['www-authenticate']).toBe('Bearer');
    });

    it('refuses a subject that would display as another person (decomposed, a no-break space, a Cyrillic а): 401 saying why', async () => {
      for (const [sub, why] of [
        ['jose\u0301', /normalization form C/],
        ['alice\u00a0smith', /no space other than U\+0020/],
        ['\u0301', /combining mark/],
        ['\u0430lice', /mix scripts/],
      ] as const) {
        const res = await t.http.get('/api/v1/me').set(...bearer(await person(a, ['viewer'], { sub })));
        expectUnauthorized(res);
        expect(res.body.detail).toMatch(why);
      }
      // Their lookalikes, the subjects they would have passed for, are still let in.
      for (const sub of ['jos\u00e9', 'alice smith', 'alice']) {
        expect((await t.http.get('/api/v1/me').set(...bearer(await person(a, ['viewer'], { sub })))).body).toMatchObject({ type: 'oidc', id: sub });
      }
    });

    it('refuses a subject with zero-width joiners where they show as nothing (alice as alice, or no one): 401 saying why', async () => {
      for (const sub of ['al\u200cice', 'alice\u200d', '\u200calice', '\u200d', '\u200c\u200c']) {
        const res = await t.http.get('/api/v1/me').set(...bearer(await person(a, ['viewer'], { sub })));
        expectUnauthorized(res);
        expect(res.body.detail).toMatch(/zero-width joiner or non-joiner only after a virama/);
      }
      // Where a script or an emoji sequence needs one, the joiner is part of the subject: a half ka, a Persian word, a family.
      for (const sub of ['\u0915\u094d\u200d\u0937', '\u0645\u06cc\u200c\u062e\u0648\u0627\u0647\u0645', '\u{1f469}\u200d\u{1f469}\u200d\u{1f467}']) {
        expect((await t.http.get('/api/v1/me').set(...bearer(await person(a, ['viewer'], { sub })))).body).toMatchObject({ type: 'oidc', id: sub });
      }
    });

    it('accepts a token that expired within the clock skew', async () => {
      const token = await idp.token({ claims: { org_id: a.id, roles: ['viewer'] }, expiresIn: -10 });
      await t.http
        .get('/api/v1/agents')
        .set(...bearer(token))
        .expect(200);
    });

    it('refuses a token whose exp lies past the year 9999 with 401 saying so, as an API key cannot expire later (was 500 on GET /me)', async () => {
      // A provider writing "never" as a huge exp: its expiry in ms was past what a Date holds, and GET /me's
      // expiresAt threw RangeError (500 internal_error) for exp 10^13 s; attack round 20, AB-F3.
      for (const expiresIn of [1e13, 253402300800 - Math.floor(Date.now() / 1000)]) {
        const token = await idp.token({ claims: { org_id: a.id, roles: ['viewer'] }, expiresIn });
        const res = await t.http.get('/api/v1/me').set(...bearer(token));
        expect(res.status).toBe(401);
        expect(res.body.detail).toBe("The token's exp claim is not accepted (it is past the year 9999).");
      }
      // The last second of 9999 is taken.
      const last = await idp.token({ claims: { org_id: a.id, roles: ['viewer'] }, expiresIn: 253402300799 - Math.floor(Date.now() / 1000) });
      const me = await t.http
        .get('/api/v1/me')
        .set(...bearer(last))
        .expect(200);
      // Its end with the clock skew is shown as the last second of 9999: `+010000-01-01T00:00:59.000Z` is no date-time.
      expect(me.body.expiresAt).toBe('9999-12-31T23:59:59.000Z');
    });

    it('picks up a rotated key (a new kid) and refuses a retired one once the keys are fetched again', async () => {
      const before = idp.requests.filter((p) => p === '/jwks').length;
      const oldToken = await person(a, ['viewer']);
      await t.http
        .get('/api/v1/agents')
        .set(...bearer(oldToken))
        .expect(200);
      await sleep(KEY_REFRESH_COOLDOWN_MS + 50);
      await idp.rotate({ retire: true });
      await t.http
        .get('/api/v1/agents')
        .set(...bearer(await person(a, ['viewer'])))
        .expect(200);
      expect(idp.requests.filter((p) => p === '/jwks').length).toBe(before + 1);
      // The fetch that found the new key also dropped the retired one.
      expectUnauthorized(await t.http.get('/api/v1/agents').set(...bearer(oldToken)));
    });

    it('lets a signed-in person call a tool and another decide its approval, but never their own', async () => {
      const requester = `requester-${randomUUID()}`;
      const asking = await person(a, ['agent', 'approver'], { sub: requester });
      const call = await t.http
        .post(`/api/v1/agents/${agentA}/tool-calls`)
        .set(...bearer(asking))
        .send({ tool: 'fx-mcp-write', arguments: { tag: 'oidc', text: 'from a person' } })
        .expect(202);
      expect(call.body.status).toBe('pending_approval');
      // The same person, with another token: still the requester.
      const again = await person(a, ['approver'], { sub: requester });
      const own = await t.http
        .post(`/api/v1/approvals/${call.body.approvalId}/approve`)
        .set(...bearer(again))
        .send({})
        .expect(403);
      expect(own.body.code).toBe('self_approval_forbidden');
      const approver = `approver-${randomUUID()}`;
      const decided = await t.http
        .post(`/api/v1/approvals/${call.body.approvalId}/approve`)
        .set(...bearer(await person(a, ['approver'], { sub: approver })))
        .send({})
        .expect(200);
      expect(decided.body.toolCall.status).toBe('succeeded');
      const audit = await t.http
        .get('/api/v1/audit-events?type=approval.approved')
        .set(...bearer(a.keys.admin))
        .expect(200);
      expect(audit.body.items.find((e: { target: { id: string } }) => e.target.id === call.body.approvalId).actor).toEqual({ type: 'oidc', id: approver });
    });

    it('answers hostile JWT-shaped tokens (random headers, claims and signatures) with 401, never a 5xx', async () => {
      const b64 = (v: unknown) => Buffer.from(typeof v === 'string' ? v : JSON.stringify(v)).toString('base64url');
      const header = fc.oneof(
        fc.record({ alg: fc.constantFrom('RS256', 'ES256', 'none', 'HS256', 'PS512', '__proto__', ''), kid: fc.option(fc.string(), { nil: undefined }) }),
        fc.jsonValue(),
        fc.string(),
      );
      const payload = fc.oneof(fc.jsonValue(), fc.record({ sub: fc.jsonValue(), org_id: fc.constantFrom(a.id, a.slug, '__proto__'), roles: fc.jsonValue() }));
      await fc.assert(
        fc.asyncProperty(header, payload, fc.string(), async (h, p, sig) => {
          const res = await t.http.get('/api/v1/me').set(...bearer(`${b64(h)}.${b64(p)}.${b64(sig)}`));
          expect(res.status).toBe(401);
          expect(res.body.code).toBe('unauthorized');
        }),
        { numRuns: 60 },
      );
    });

    it('reads runs by role (list, one, its events) like a key; starting and cancelling one take an API key', async () => {
      const model = await startScriptedModel(sequence({ text: 'Done.' }));
      try {
        const provider = await t.http
          .post('/api/v1/model-providers')
          .set(...bearer(a.keys.admin))
          .send({ name: 'oidc-runs', kind: 'openai-compatible', baseUrl: model.url })
          .expect(201);
        const agent = await t.http
          .post('/api/v1/agents')
          .set(...bearer(a.keys.builder))
          .send({ slug: `oidc-run-${++slugs}`, name: 'Runner' })
          .expect(201);
        await t.http
          .put(`/api/v1/agents/${agent.body.id}/draft`)
          .set(...bearer(a.keys.builder))
          .send({ instructions: 'Answer.', capabilities: [], model: { provider: provider.body.id, name: 'm' } })
          .expect(200);
        await t.http
          .post(`/api/v1/agents/${agent.body.id}/publish`)
          .set(...bearer(a.keys.builder))
          .expect(201);
        const run = await t.http
          .post(`/api/v1/agents/${agent.body.id}/runs`)
          .set(...bearer(a.keys.agent))
          .set('Prefer', 'wait=10')
          .send({ input: 'hi' })
          .expect(201);
        expect(run.body.status).toBe('succeeded');

        for (const roles of [['viewer'], ['agent'], ['approver']]) {
          const token = await person(a, roles);
          const list = await t.http
            .get(`/api/v1/runs?agentId=${agent.body.id}`)
            .set(...bearer(token))
            .expect(200);
          expect(list.body.items.map((r: { id: string }) => r.id)).toEqual([run.body.id]);
          const one = await t.http
            .get(`/api/v1/runs/${run.body.id}`)
            .set(...bearer(token))
            .expect(200);
          expect(one.body).toMatchObject({ id: run.body.id, status: 'succeeded', output: 'Done.' });
          const events = await t.http
            .get(`/api/v1/runs/${run.body.id}/events`)
            .set(...bearer(token))
            .expect(200);
          expect(events.text).toContain('event: run.succeeded');
        }
        // Roles still apply, and so does the organization.
        await t.http
          .get('/api/v1/runs')
          .set(...bearer(await person(a, ['owner'])))
          .expect(403);
        await t.http
          .get(`/api/v1/runs/${run.body.id}`)
          .set(...bearer(await person(b, ['viewer'])))
          .expect(404);

        const runner = await person(a, ['agent', 'builder']);
        const start = await t.http
          .post(`/api/v1/agents/${agent.body.id}/runs`)
          .set(...bearer(runner))
          .send({ input: 'hi' })
          .expect(403);
        expect(start.body).toMatchObject({ code: 'forbidden', detail: expect.stringContaining('API key') });
        const cancel = await t.http
          .post(`/api/v1/runs/${run.body.id}/cancel`)
          .set(...bearer(runner))
          .expect(403);
        expect(cancel.body.code).toBe('forbidden');
      } finally {
        await model.close();
      }
    });

    it('narrows by the token scopes when it has them: REST needs api', async () => {
      const mcpOnly = await person(a, ['viewer'], { scope: 'openid mcp:tools' });
      const res = await t.http
        .get('/api/v1/agents')
        .set(...bearer(mcpOnly))
        .expect(403);
      expect(res.body).toMatchObject({ code: 'insufficient_scope', scope: 'api' });
      expect(res.headers['www-authenticate']).toBe('Bearer error="insufficient_scope", scope="api"');
      await t.http
        .get('/api/v1/agents')
        .set(...bearer(await person(a, ['viewer'], { scope: 'openid api' })))
        .expect(200);
    });
  });

  describe("an agent's MCP endpoint", () => {
    it('answers 401 with WWW-Authenticate pointing at its protected-resource metadata, which names the provider', async () => {
      const anonymous = await fetch(mcpUrl(agentA), {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
        body: '{}',
      });
      expect(anonymous.status).toBe(401);
      expect(anonymous.headers.get('www-authenticate')).toBe(`Bearer resource_metadata="${metadataUrl(agentA)}"`);
      const params = extractWWWAuthenticateParams(anonymous);
      expect(params.resourceMetadataUrl?.href).toBe(metadataUrl(agentA));

      const forged = await fetch(mcpUrl(agentA), {
        method: 'POST',
        headers: { authorization: 'Bearer not.a.token', 'content-type': 'application/json' },
        body: '{}',
      });
      expect(forged.status).toBe(401);
      expect(extractWWWAuthenticateParams(forged)).toMatchObject({ error: 'invalid_token', resourceMetadataUrl: new URL(metadataUrl(agentA)) });

      // What an MCP client does next: the SDK's own discovery reads the document.
      const metadata = await discoverOAuthProtectedResourceMetadata(mcpUrl(agentA), { resourceMetadataUrl: params.resourceMetadataUrl });
      expect(metadata).toMatchObject({
        resource: mcpUrl(agentA).href,
        authorization_servers: [idp.issuer],
        scopes_supported: ['mcp:tools'],
        bearer_methods_supported: ['header'],
      });
      // Found also by the well-known path alone, for clients that never saw the header.
      expect((await discoverOAuthProtectedResourceMetadata(mcpUrl(agentB))).resource).toBe(mcpUrl(agentB).href);
      const notAnAgent = await t.http.get('/.well-known/oauth-protected-resource/api/v1/agents/not-a-uuid/mcp').expect(404);
      expect(notAnAgent.body.code).toBe('not_found');
    });

    it('a Host that is not a plain name, address and port gets no pointer, so nothing breaks out of the quoted challenge', async () => {
      for (const host of ['evil"x', 'evil"x:80', 'a b']) {
        const res = await t.http.post(`/api/v1/agents/${agentA}/mcp`).set('Host', host).set('Content-Type', 'application/json').send('{}');
        expect([host, res.status, res.headers['www-authenticate']]).toEqual([host, 401, 'Bearer']);
      }
    });

    it.each([
      ['tools/call', { name: 'search_notes', arguments: { query: 'x' } }, 'api'],
      // A task is a held tools/call's answer: tasks/get handed the tool's result to a token that could not call it.
      ['tasks/get', { taskId: randomUUID() }, 'openid'],
      ['tasks/result', { taskId: randomUUID() }, 'openid'],
      ['tasks/cancel', { taskId: randomUUID() }, 'openid'],
      ['tasks/list', {}, 'openid'],
    ])('refuses %s to a token without mcp:tools: 403 insufficient_scope naming the scope', async (method, params, scope) => {
      const token = await person(a, ['agent'], { scope });
      const call = { jsonrpc: '2.0', id: 1, method, params };
      const res = await fetch(mcpUrl(agentA), {
        method: 'POST',
        headers: {
          authorization: `Bearer ${token}`,
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          'mcp-protocol-version': '2025-11-25',
        },
        body: JSON.stringify(call),
      });
      expect(res.status).toBe(403);
      expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      expect(await res.json()).toMatchObject({ code: 'insufficient_scope', scope: 'mcp:tools' });
      expect(extractWWWAuthenticateParams(res)).toMatchObject({
        error: 'insufficient_scope',
        scope: 'mcp:tools',
        resourceMetadataUrl: new URL(metadataUrl(agentA)),
      });
    });
  });
});

describe('without an identity provider (e2e)', () => {
  let idp: TestIdentityProvider;
  let t: TestApp;
  let agentId: string;

  beforeAll(async () => {
    idp = await TestIdentityProvider.start();
    t = await createTestApp();
    agentId = randomUUID();
  });
  afterAll(async () => {
    await t.close();
    await idp.close();
  });

  it('has no metadata, a plain Bearer challenge, and refuses JWTs without asking anyone', async () => {
    const metadata = await t.http.get(`/.well-known/oauth-protected-resource/api/v1/agents/${agentId}/mcp`).expect(404);
    expect(metadata.headers['content-type']).toMatch(/^application\/problem\+json/);
    const res = await t.http.post(`/api/v1/agents/${agentId}/mcp`).send({});
    expect(res.status).toBe(401);
    expect(res.headers['www-authenticate']).toBe('Bearer');
    const org = await createOrg(t);
    const jwt = await idp.token({ claims: { org_id: org.id, roles: ['admin'] } });
    expect((await t.http.get('/api/v1/me').set(...bearer(jwt))).status).toBe(401);
    expect(idp.requests).toEqual([]);
  });
});

describe('the identity provider, reached through the egress policy (e2e)', () => {
  let idp: TestIdentityProvider;
  beforeAll(async () => {
    idp = await TestIdentityProvider.start();
  });
  afterAll(() => idp.close());

  const oidc = () => idp.config({ keyRefreshCooldownMs: 30_000 });

  it("ends an event stream when the token it was opened with expires (an API key's stream stays)", async () => {
    const t = await createTestApp({ config: { oidc: { ...oidc(), clockSkewSeconds: 0 } } });
    const streams: SseClient[] = [];
    try {
      await t.app.listen(0, '127.0.0.1');
      const base = await t.app.getUrl();
      const org = await createOrg(t);
      const token = await idp.token({ claims: { org_id: org.id, roles: ['approver'] }, expiresIn: 2 });
      const person = await SseClient.open(`${base}/api/v1/events`, { authorization: `Bearer ${token}` });
      const key = await SseClient.open(`${base}/api/v1/events`, { authorization: `Bearer ${org.keys.approver}` });
      streams.push(person, key);
      let keyEnded = false;
      key.response.on('end', () => (keyEnded = true));
      const ended = new Promise<number>((resolve) => person.response.on('end', () => resolve(Date.now())));
      await person.waitFor((x) => x.lastId !== undefined);
      const at = await ended;
      // Not before the token's `exp` (whole seconds, so up to a second early of the 2 s asked).
      const { exp } = JSON.parse(Buffer.from(token.split('.')[1], 'base64url').toString()) as { exp: number };
      expect(at).toBeGreaterThanOrEqual(exp * 1000);
      expect((await t.http.get('/api/v1/me').set(...bearer(token))).status).toBe(401);
      expect(keyEnded).toBe(false);
    } finally {
      streams.forEach((c) => c.close());
      await t.close();
    }
  });

  it('is not asked again by a flood of tokens with unknown kids', async () => {
    const t = await createTestApp({ config: { oidc: oidc() } });
    try {
      const org = await createOrg(t);
      const valid = await idp.token({ claims: { org_id: org.id, roles: ['viewer'] } });
      await t.http
        .get('/api/v1/me')
        .set(...bearer(valid))
        .expect(200);
      const asked = idp.requests.length;
      const flood = await Promise.all(
        Array.from({ length: 40 }, async (_, i) =>
          t.http.get('/api/v1/me').set(...bearer(await idp.token({ claims: { org_id: org.id, roles: ['viewer'] }, kid: `forged-${i}-${randomUUID()}` }))),
        ),
      );
      expect(flood.map((r) => r.status)).toEqual(flood.map(() => 401));
      // Within the cooldown of the fetch the valid token caused: not one more request.
      expect(idp.requests.length).toBe(asked);
      await t.http
        .get('/api/v1/me')
        .set(...bearer(valid))
        .expect(200);
    } finally {
      await t.close();
    }
  });

  it('is not reached when the egress policy refuses its address: 503, not a verdict on the token', async () => {
    const t = await createTestApp({ config: { oidc: oidc(), egress: { allowedHosts: [], connectTimeoutMs: 5000, requestTimeoutMs: 30000 } } });
    try {
      const org = await createOrg(t);
      const before = idp.requests.length;
      const res = await t.http.get('/api/v1/me').set(...bearer(await idp.token({ claims: { org_id: org.id, roles: ['viewer'] } })));
      expect(res.status).toBe(503);
      expect(res.body.code).toBe('service_unavailable');
      expect(idp.requests.length).toBe(before);
      // API keys are not affected by the provider being out of reach.
      await t.http
        .get('/api/v1/me')
        .set(...bearer(org.keys.viewer))
        .expect(200);
    } finally {
      await t.close();
    }
  });
});
