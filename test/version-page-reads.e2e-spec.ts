import { DataSource } from 'typeorm';
import { FixtureMcpServer, startFixtureMcpServer } from './support/mcp-fixture-server';
import { bearer, createOrg, createTestApp, TestApp, TestOrg } from './support/test-app';

/**
 * `GET /agents/{id}/versions` builds each version of its page to show its drift, and each build
 * read what its version binds (knowledge collections, MCP connections, skills) on its own, one
 * after another: a page of 200 versions made up to 600 round trips (attack round 11, G-F6). A
 * page's bindings are now read once for the page, so its statements do not grow with its size.
 */
describe('a page of versions reads its bindings once (e2e)', () => {
  let t: TestApp;
  let org: TestOrg;
  let server: FixtureMcpServer;

  beforeAll(async () => {
    t = await createTestApp({ config: { toolTimeoutMs: 5000 } });
    org = await createOrg(t, ['knowledge:read', 'mcp:remote']);
    server = await startFixtureMcpServer();
  }, 240_000);
  afterAll(async () => {
    await server.close();
    await t.close();
  });

  const as = (role: keyof TestOrg['keys']) => bearer(org.keys[role]);

  it('answers every version with its drift, in as many statements for 12 versions as for 24', async () => {
    const collection = (
      await t.http
        .post('/api/v1/knowledge/collections')
        .set(...as('builder'))
        .send({ name: 'handbook' })
        .expect(201)
    ).body.id;
    const other = (
      await t.http
        .post('/api/v1/knowledge/collections')
        .set(...as('builder'))
        .send({ name: 'faq' })
        .expect(201)
    ).body.id;
    const skill = (
      await t.http
        .post('/api/v1/skills')
        .set(...as('builder'))
        .send({ name: 'tone', description: 'd', instructions: 'Be kind.' })
        .expect(201)
    ).body.id;
    const connection = (
      await t.http
        .post('/api/v1/mcp-connections')
        .set(...as('admin'))
        .send({ server: 'remote', name: 'vendor', url: server.url })
        .expect(201)
    ).body.id;
    const second = (
      await t.http
        .post('/api/v1/mcp-connections')
        .set(...as('admin'))
        .send({ server: 'remote', name: 'vendor-two', url: server.url })
        .expect(201)
    ).body.id;
    const agent = (
      await t.http
        .post('/api/v1/agents')
        .set(...as('builder'))
        .send({ slug: 'paged', name: 'Paged' })
        .expect(201)
    ).body.id;
    for (let v = 1; v <= 24; v++) {
      await t.http
        .put(`/api/v1/agents/${agent}/draft`)
        .set(...as('builder'))
        .send({
          instructions: `Version ${v}.`,
          capabilities: [{ id: 'knowledge' }, { id: 'skills' }],
          // Versions bind different collections: each keeps its own.
          resources: { knowledgeCollections: v % 2 ? [collection] : [collection, other], skills: [skill] },
          // Some name another list of connections: each version is built with its own.
          mcpServers:
            v % 3 === 0
              ? []
              : v % 4 === 0
                ? [
                    { connection: second, tools: ['fail'] },
                    { connection, tools: ['lookup'] },
                  ]
                : [{ connection, tools: ['lookup'] }],
        })
        .expect(200);
      const published = await t.http.post(`/api/v1/agents/${agent}/publish`).set(...as('builder'));
      expect([published.status, published.body.errors]).toEqual([201, undefined]);
    }
    const page = (limit: number) =>
      t.http
        .get(`/api/v1/agents/${agent}/versions?limit=${limit}`)
        .set(...as('viewer'))
        .expect(200);
    const offered = (item: { toolDigests: Record<string, string> }) => Object.keys(item.toolDigests).sort();
    // The fewest of a few reads: a sweeper's statement may land during one.
    const statements = async (limit: number) => {
      const counts: number[] = [];
      for (let i = 0; i < 3; i++) {
        const queries = jest.spyOn(DataSource.prototype, 'query');
        try {
          const res = await page(limit);
          expect(res.body.items).toHaveLength(limit);
          counts.push(queries.mock.calls.length);
        } finally {
          queries.mockRestore();
        }
      }
      return Math.min(...counts);
    };
    // Warm: each version's skills are remembered after its first build.
    const all = (await page(24)).body.items as { version: number; drift: unknown[]; toolDigests: Record<string, string> }[];
    expect(all.map((v) => v.version)).toEqual(Array.from({ length: 24 }, (_, i) => 24 - i));
    for (const v of all) {
      // Built with what it binds: a version built without its connection would show `lookup` removed.
      expect(v.drift).toEqual([]);
      expect(offered(v)).toEqual(v.version % 3 ? expect.arrayContaining(['lookup', 'load_skill', 'search_knowledge']) : expect.not.arrayContaining(['lookup']));
      expect(offered(v).includes('fail')).toBe(v.version % 3 !== 0 && v.version % 4 === 0);
    }
    // Both pages name the same two lists of connections.
    expect(await statements(24)).toBe(await statements(12));

    // The server's tool changed since: every version offering it shows the drift, the others none.
    server.state.lookupDescription = 'Looks a customer up, differently.';
    await t.http
      .post(`/api/v1/mcp-connections/${connection}/sync`)
      .set(...as('admin'))
      .expect(200);
    const drifted = (await page(24)).body.items as { version: number; drift: { tool: string }[] }[];
    for (const v of drifted) expect(v.drift.map((d) => d.tool)).toEqual(v.version % 3 ? ['lookup'] : []);
  });
});
