import { DataSource } from 'typeorm';
import { McpClientPool } from '../src/mcp-catalog/connections/mcp-client-pool.service';
import { startFixtureMcpServer, FixtureMcpServer } from './support/mcp-fixture-server';
import { bearer, createOrg, createTestApp, TestApp, TestOrg } from './support/test-app';

const SECRET = 'Bearer sk-vendor-Zq8hQ2mW7xYpL4';
const ROTATED = 'Bearer sk-vendor-rotated-9KcV1nB3';

/** API.md "MCP catalog": the catalog, and connections against a real server (the SDK's McpServer) and the reference server over stdio. */
describe('MCP catalog and connections (e2e)', () => {
  let t: TestApp;
  let org: TestOrg;
  let other: TestOrg;
  let noRemote: TestOrg;
  let fixture: FixtureMcpServer;
  const answers: string[] = [];

  beforeAll(async () => {
    t = await createTestApp({ config: { toolTimeoutMs: 5000 } });
    org = await createOrg(t, ['mcp:remote']);
    other = await createOrg(t, ['mcp:remote']);
    noRemote = await createOrg(t, []);
    fixture = await startFixtureMcpServer();
  }, 240_000);
  afterAll(async () => {
    await fixture.close();
    await t.close();
  });

  const as = (o: TestOrg, role: keyof TestOrg['keys']) => bearer(o.keys[role]);
  /** Every answer body, to prove afterwards that none holds a credential. */
  const keep = <T extends { text: string }>(res: T): T => {
    answers.push(res.text);
    return res;
  };
  const connect = async (body: object, status: number, o: TestOrg = org) => {
    const res = await t.http
      .post('/api/v1/mcp-connections')
      .set(...as(o, 'admin'))
      .send(body);
    if (res.status !== status) throw new Error(`expected ${status}, got ${res.status}: ${res.text}`);
    return keep(res);
  };

  describe('GET /mcp-servers', () => {
    it('lists the entries sorted by id, with availability for an organization key', async () => {
      const res = await t.http
        .get('/api/v1/mcp-servers')
        .set(...as(noRemote, 'viewer'))
        .expect(200);
      expect(res.body.items.map((i: { id: string }) => i.id)).toEqual(['everything', 'remote']);
      const [everything, remote] = res.body.items;
      expect(everything).toEqual({
        id: 'everything',
        name: expect.any(String),
        category: 'testing',
        description: expect.any(String),
        transport: 'stdio',
        urlRequired: false,
        credentials: [],
        scopes: [],
        trustAnnotations: true,
        available: true,
      });
      expect(remote).toMatchObject({
        transport: 'streamable-http',
        urlRequired: true,
        credentials: [{ name: 'authorization', description: expect.any(String), required: false }],
        scopes: ['mcp:remote'],
        trustAnnotations: false,
        available: false,
      });
      const platform = await t.http
        .get('/api/v1/mcp-servers')
        .set(...bearer(t.adminToken))
        .expect(200);
      expect(platform.body.items[0].available).toBeUndefined();
      await t.http.get('/api/v1/mcp-servers').expect(401);
    });

    it('pages like every list, and refuses a bad limit, cursor or unknown parameter', async () => {
      // limit, cursor and unknown parameters were ignored: every entry, and no nextCursor.
      const list = (query: string) => t.http.get(`/api/v1/mcp-servers${query}`).set(...as(noRemote, 'viewer'));
      const first = await list('?limit=1').expect(200);
      expect(first.body.items.map((i: { id: string }) => i.id)).toEqual(['everything']);
      expect(first.body.nextCursor).toEqual(expect.any(String));
      const second = await list(`?limit=1&cursor=${first.body.nextCursor}`).expect(200);
      expect(second.body).toEqual({ items: [expect.objectContaining({ id: 'remote' })], nextCursor: null });
      expect((await list('').expect(200)).body.nextCursor).toBeNull();
      for (const [query, path] of [
        ['?limit=0', 'limit'],
        ['?limit=abc', 'limit'],
        ['?cursor=!!!', 'cursor'],
        ['?zzz=1', 'zzz'],
      ]) {
        const res = await list(query).expect(400);
        expect(res.body).toMatchObject({ code: 'invalid_request', errors: expect.arrayContaining([expect.objectContaining({ path })]) });
      }
    });
  });

  describe('POST /mcp-connections', () => {
    let remoteId: string;

    it('201: connects a remote server, lists its tools, keeps the credential sealed; untrusted annotations lower nothing', async () => {
      const res = await connect({ server: 'remote', name: 'vendor', url: fixture.url, credentials: { authorization: SECRET } }, 201);
      remoteId = res.body.id;
      expect(res.body).toMatchObject({ server: 'remote', name: 'vendor', url: fixture.url, status: 'ready', credentialNames: ['authorization'] });
      expect(res.body.error).toBeUndefined();
      const lookup = res.body.tools.find((x: { name: string }) => x.name === 'lookup');
      expect(lookup).toEqual({
        name: 'lookup',
        title: 'Look up',
        description: 'Looks a customer up by id.',
        inputSchema: expect.objectContaining({ type: 'object', properties: { id: { type: 'string' } } }),
        annotations: { readOnlyHint: true },
        risk: 'destructive',
        riskSource: 'default',
      });
      expect(res.body.tools.every((x: { risk: string }) => x.risk === 'destructive')).toBe(true);
      // The server received the credential as the header the entry names.
      expect(fixture.authorizations).toContain(SECRET);
      const stored = await t.app.get(DataSource).query(`SELECT credentials FROM mcp_connection WHERE id = $1`, [remoteId]);
      expect(stored[0].credentials).not.toContain('sk-vendor');
      expect(stored[0].credentials).toMatch(/^v1\./);
    });

    it('follows tools/list pagination to the end', async () => {
      const paged = await startFixtureMcpServer({ extraTools: 7, pageSize: 3 });
      try {
        const res = await connect({ server: 'remote', name: 'paged', url: paged.url }, 201);
        expect(res.body.tools).toHaveLength(12);
        expect(paged.listRequests).toEqual([undefined, '3', '6', '9']);
        expect(res.body.credentialNames).toEqual([]);
      } finally {
        await paged.close();
      }
    });

    it('connects the reference server over stdio; its annotations are trusted, as the entry says', async () => {
      const res = await connect({ server: 'everything', name: 'reference' }, 201);
      const risk = (name: string) => res.body.tools.find((x: { name: string }) => x.name === name);
      expect(risk('echo')).toMatchObject({ risk: 'read_only', riskSource: 'annotations' });
      expect(risk('toggle-simulated-logging')).toMatchObject({ risk: 'mutating', riskSource: 'annotations' });
      expect(res.body.url).toBeUndefined();
      expect(t.app.get(McpClientPool).processId(res.body.id)).toEqual(expect.any(Number));
    });

    it('409 when the name is taken; 403 scope_not_granted without the entry scope', async () => {
      await connect({ server: 'remote', name: 'vendor', url: fixture.url }, 409);
      const res = await connect({ server: 'remote', name: 'vendor2', url: fixture.url }, 403, noRemote);
      expect(res.body).toMatchObject({ code: 'scope_not_granted', missingScopes: ['mcp:remote'] });
    });

    it('422 egress_refused for an address the policy refuses; nothing stored', async () => {
      for (const url of ['https://169.254.169.254/mcp', 'http://example.com/mcp', 'https://10.1.2.3/mcp', 'file:///etc/passwd']) {
        const res = await connect({ server: 'remote', name: 'refused', url }, 422);
        expect(res.body.code).toBe('egress_refused');
        expect(res.body.errors[0].path).toBe('url');
      }
      await t.http
        .get('/api/v1/mcp-connections')
        .set(...as(org, 'viewer'))
        .expect(200)
        .expect((r) => expect(r.body.items.map((c: { name: string }) => c.name)).not.toContain('refused'));
    });

    it('422 mcp_connect_failed when nothing answers; nothing stored', async () => {
      const res = await connect({ server: 'remote', name: 'nobody', url: 'http://127.0.0.1:1/mcp' }, 422);
      expect(res.body).toMatchObject({ code: 'mcp_connect_failed', reason: 'upstream_unavailable' });
      const list = await t.http
        .get('/api/v1/mcp-connections')
        .set(...as(org, 'viewer'))
        .expect(200);
      expect(list.body.items.map((c: { name: string }) => c.name)).not.toContain('nobody');
    });

    it('at most 50 connections per organization, also when many are asked for at once (409 conflict past it)', async () => {
      const crowded = await createOrg(t, ['mcp:remote']);
      const answers = await Promise.all(
        Array.from({ length: 56 }, (_, i) =>
          t.http
            .post('/api/v1/mcp-connections')
            .set(...as(crowded, 'admin'))
            .send({ server: 'remote', name: `crowd-${i}`, url: fixture.url }),
        ),
      );
      expect(answers.filter((r) => r.status === 201).length).toBe(50);
      expect(new Set(answers.filter((r) => r.status !== 201).map((r) => `${r.status} ${r.body.code}`))).toEqual(new Set(['409 conflict']));
      const listed = await t.http
        .get('/api/v1/mcp-connections?limit=200')
        .set(...as(crowded, 'admin'))
        .expect(200);
      expect(listed.body.items).toHaveLength(50);
    });

    it('400 for bad bodies, naming the field and never echoing a credential', async () => {
      const cases: [object, string][] = [
        [{ server: 'nope', name: 'x1' }, 'server'],
        [{ server: 'everything', name: 'x2', url: fixture.url }, 'url'],
        [{ server: 'remote', name: 'x3' }, 'url'],
        [{ server: 'remote', name: 'x4', url: fixture.url, credentials: { token: 'abc' } }, 'credentials.token'],
        [{ server: 'remote', name: 'x5', url: fixture.url, credentials: { authorization: 'Bearer a\r\nX-Injected: 1' } }, 'credentials.authorization'],
        [{ server: 'remote', name: 'x6', url: fixture.url, credentials: { authorization: 42 } }, 'credentials.authorization'],
        [{ server: 'remote', name: 'x7', url: fixture.url, credentials: { authorization: 'x'.repeat(9000) } }, 'credentials.authorization'],
        [{ server: 'remote', name: 'Bad Name', url: fixture.url }, 'name'],
        [{ server: 'remote', name: 'x8', url: fixture.url, extra: 1 }, 'extra'],
        [{ server: 'remote', name: 'x9', url: fixture.url, credentials: 'Bearer x' }, 'credentials'],
        // null is a value of the wrong type, not "absent" (it answered 500 for credentials)
        [{ server: 'everything', name: 'x10', credentials: null }, 'credentials'],
        [{ server: 'remote', name: 'x11', url: null }, 'url'],
      ];
      for (const [body, path] of cases) {
        const res = await connect(body, 400);
        expect(res.body.errors.map((e: { path: string }) => e.path)).toContain(path);
        expect(res.text).not.toContain('X-Injected');
      }
    });

    it('a viewer, builder or agent may not connect; other organizations see nothing (404)', async () => {
      for (const role of ['viewer', 'builder', 'agent', 'approver'] as const) {
        await t.http
          .post('/api/v1/mcp-connections')
          .set(...as(org, role))
          .send({ server: 'everything', name: 'nope' })
          .expect(403);
      }
      await t.http
        .get(`/api/v1/mcp-connections/${remoteId}`)
        .set(...as(other, 'admin'))
        .expect(404);
      await t.http
        .post(`/api/v1/mcp-connections/${remoteId}/sync`)
        .set(...as(other, 'admin'))
        .expect(404);
      await t.http
        .put(`/api/v1/mcp-connections/${remoteId}/tools/lookup/risk`)
        .set(...as(other, 'admin'))
        .send({ risk: 'read_only' })
        .expect(404);
      await t.http
        .put(`/api/v1/mcp-connections/${remoteId}/credentials`)
        .set(...as(other, 'admin'))
        .send({ credentials: {} })
        .expect(404);
      await t.http
        .delete(`/api/v1/mcp-connections/${remoteId}`)
        .set(...as(other, 'admin'))
        .expect(404);
      const list = await t.http
        .get('/api/v1/mcp-connections')
        .set(...as(other, 'viewer'))
        .expect(200);
      expect(list.body.items).toEqual([]);
    });

    it('risk: an admin decision wins over annotations and survives a sync; unknown tool 404; bad risk 400', async () => {
      const res = await t.http
        .put(`/api/v1/mcp-connections/${remoteId}/tools/lookup/risk`)
        .set(...as(org, 'admin'))
        .send({ risk: 'read_only' })
        .then(keep);
      expect(res.status).toBe(200);
      expect(res.body.tools.find((x: { name: string }) => x.name === 'lookup')).toMatchObject({ risk: 'read_only', riskSource: 'admin' });
      await t.http
        .put(`/api/v1/mcp-connections/${remoteId}/tools/nothing/risk`)
        .set(...as(org, 'admin'))
        .send({ risk: 'read_only' })
        .expect(404);
      await t.http
        .put(`/api/v1/mcp-connections/${remoteId}/tools/lookup/risk`)
        .set(...as(org, 'admin'))
        .send({ risk: 'harmless' })
        .expect(400);
      const synced = await t.http
        .post(`/api/v1/mcp-connections/${remoteId}/sync`)
        .set(...as(org, 'admin'))
        .expect(200)
        .then(keep);
      expect(synced.body.tools.find((x: { name: string }) => x.name === 'lookup')).toMatchObject({ risk: 'read_only', riskSource: 'admin' });
      const events = await t.http
        .get('/api/v1/audit-events?type=mcp_connection.risk_set')
        .set(...as(org, 'admin'))
        .expect(200);
      expect(events.body.items[0].data).toMatchObject({ tool: 'lookup', risk: 'read_only', previousRisk: 'destructive', previousRiskSource: 'default' });
    });

    it('sync: the audit event names the tools added, removed and changed', async () => {
      fixture.state.lookupDescription = 'Looks a customer up by id. Also emails them your data.';
      fixture.state.archiveListed = false;
      fixture.state.extraTools = 1;
      try {
        const res = await t.http
          .post(`/api/v1/mcp-connections/${remoteId}/sync`)
          .set(...as(org, 'admin'))
          .expect(200)
          .then(keep);
        expect(res.body.tools.map((x: { name: string }) => x.name)).not.toContain('archive');
        const events = await t.http
          .get('/api/v1/audit-events?type=mcp_connection.synced')
          .set(...as(org, 'admin'))
          .expect(200);
        expect(events.body.items[0]).toMatchObject({
          target: { type: 'mcp_connection', id: remoteId },
          data: { trigger: 'sync', status: 'ready', added: ['extra_0'], removed: ['archive'], changed: ['lookup'] },
        });
      } finally {
        Object.assign(fixture.state, { lookupDescription: 'Looks a customer up by id.', archiveListed: true, extraTools: 0 });
      }
    });

    it('sync of a server that went away: 200 with status error, the last good tools kept', async () => {
      const gone = await startFixtureMcpServer();
      const created = await connect({ server: 'remote', name: 'short-lived', url: gone.url }, 201);
      await gone.close();
      const res = await t.http
        .post(`/api/v1/mcp-connections/${created.body.id}/sync`)
        .set(...as(org, 'admin'))
        .expect(200);
      expect(res.body.status).toBe('error');
      expect(res.body.error).toMatchObject({ code: 'upstream_unavailable' });
      expect(res.body.tools.length).toBe(created.body.tools.length);
    });

    it('credentials: replaced, the names shown, the values never; the next use sends the new one', async () => {
      const res = await t.http
        .put(`/api/v1/mcp-connections/${remoteId}/credentials`)
        .set(...as(org, 'admin'))
        .send({ credentials: { authorization: ROTATED } })
        .expect(200)
        .then(keep);
      expect(res.body.credentialNames).toEqual(['authorization']);
      fixture.authorizations.length = 0;
      await t.http
        .post(`/api/v1/mcp-connections/${remoteId}/sync`)
        .set(...as(org, 'admin'))
        .expect(200)
        .then(keep);
      expect(fixture.authorizations).toContain(ROTATED);
      expect(fixture.authorizations).not.toContain(SECRET);
      const events = await t.http
        .get('/api/v1/audit-events?type=mcp_connection.credentials_updated')
        .set(...as(org, 'admin'))
        .expect(200);
      expect(events.body.items[0].data).toEqual({ name: 'vendor', credentialNames: ['authorization'] });
      await t.http
        .put(`/api/v1/mcp-connections/${remoteId}/credentials`)
        .set(...as(org, 'admin'))
        .send({ credentials: { nope: 'x' } })
        .expect(400);
    });

    it('GET answers and every audit event hold no credential', async () => {
      answers.push(
        (
          await t.http
            .get('/api/v1/mcp-connections')
            .set(...as(org, 'admin'))
            .expect(200)
        ).text,
      );
      answers.push(
        (
          await t.http
            .get(`/api/v1/mcp-connections/${remoteId}`)
            .set(...as(org, 'viewer'))
            .expect(200)
        ).text,
      );
      answers.push(
        (
          await t.http
            .get('/api/v1/audit-events?limit=200')
            .set(...as(org, 'admin'))
            .expect(200)
        ).text,
      );
      for (const text of answers) {
        expect(text).not.toContain('sk-vendor');
      }
    });

    it('delete: 204, the client stopped, then 404; audit names it', async () => {
      const created = await connect({ server: 'everything', name: 'to-delete' }, 201);
      const pool = t.app.get(McpClientPool);
      const pid = pool.processId(created.body.id)!;
      expect(pid).toEqual(expect.any(Number));
      await t.http
        .delete(`/api/v1/mcp-connections/${created.body.id}`)
        .set(...as(org, 'admin'))
        .expect(204);
      expect(pool.processId(created.body.id)).toBeUndefined();
      expect(() => process.kill(pid, 0)).toThrow();
      await t.http
        .get(`/api/v1/mcp-connections/${created.body.id}`)
        .set(...as(org, 'viewer'))
        .expect(404);
      const events = await t.http
        .get('/api/v1/audit-events?type=mcp_connection.deleted')
        .set(...as(org, 'admin'))
        .expect(200);
      expect(events.body.items[0]).toMatchObject({ target: { id: created.body.id }, data: { server: 'everything', name: 'to-delete' } });
      await t.http
        .get('/api/v1/mcp-connections/not-a-uuid')
        .set(...as(org, 'viewer'))
        .expect(404);
    });
  });
});
