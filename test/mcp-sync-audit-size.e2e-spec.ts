import { DataSource } from 'typeorm';
import { startFixtureMcpServer, FixtureMcpServer } from './support/mcp-fixture-server';
import { bearer, createOrg, createTestApp, TestApp, TestOrg } from './support/test-app';

/**
 * Attack round 19, Z-F2: what a sync of an MCP connection writes to the append-only audit log. The
 * `mcp_connection.synced` event named every tool added, removed and changed, and a server (any URL
 * an organization's admin saves) lists 500 tools of names of 128 characters, control characters
 * among them, which JSON prints six characters apiece: a list swapped for another made an event of
 * 769 KB at every sync, and a list changed in its descriptions alone 384 KB.
 */
jest.setTimeout(120_000);

const NAME_CHARS = 128;
// 500 names of 128 characters, `prefix` and a number, the rest a control character.
const tools = (prefix: string, description = 'd') =>
  Array.from({ length: 500 }, (_, i) => {
    const head = `${prefix}${String(i).padStart(3, '0')}`;
    return { name: head + '\u0001'.repeat(NAME_CHARS - head.length), description, inputSchema: { type: 'object' } };
  });

describe('the audit event of an MCP sync is bounded whatever the server lists', () => {
  let t: TestApp;
  let org: TestOrg;
  let server: FixtureMcpServer;

  beforeAll(async () => {
    t = await createTestApp({ config: { toolTimeoutMs: 5000 } });
    org = await createOrg(t, ['mcp:remote']);
    server = await startFixtureMcpServer();
  }, 240_000);
  afterAll(async () => {
    await server.close();
    await t.close();
  });

  const admin = () => bearer(org.keys.admin);
  async function lastSynced(id: string): Promise<{ data: Record<string, unknown>; stored: number; read: number }> {
    const events = await t.http
      .get('/api/v1/audit-events?type=mcp_connection.synced&limit=1')
      .set(...admin())
      .expect(200);
    const item = events.body.items[0];
    expect(item.target.id).toBe(id);
    const [row] = await t.app.get(DataSource).query<{ bytes: string }[]>(`SELECT octet_length(data::text) AS bytes FROM audit_event WHERE id = $1`, [item.id]);
    return { data: item.data, stored: Number(row.bytes), read: Buffer.byteLength(JSON.stringify(item.data)) };
  }

  it('names the first 20 tools listed, added, removed and changed and counts the rest, while the connection shows all', async () => {
    server.state.rawToolsList = () => ({ result: { tools: tools('a') } });
    const created = await t.http
      .post('/api/v1/mcp-connections')
      .set(...admin())
      .send({ server: 'remote', name: 'many', url: server.url })
      .expect(201);
    expect(created.body.tools).toHaveLength(500);
    const made = await t.http
      .get('/api/v1/audit-events?type=mcp_connection.created&limit=1')
      .set(...admin())
      .expect(200);
    expect(made.body.items[0].data.tools).toEqual(
      tools('a')
        .slice(0, 20)
        .map((x) => x.name),
    );
    expect(made.body.items[0].data.toolsOmitted).toBe(480);

    // Half the list swapped for other names, the other half's descriptions changed.
    server.state.rawToolsList = () => ({ result: { tools: [...tools('a', 'e').slice(0, 250), ...tools('b').slice(0, 250)] } });
    await t.http
      .post(`/api/v1/mcp-connections/${created.body.id}/sync`)
      .set(...admin())
      .expect(200);
    const { data, stored, read } = await lastSynced(created.body.id);
    expect(data).toMatchObject({ status: 'ready', addedOmitted: 230, removedOmitted: 230, changedOmitted: 230 });
    const sorted = tools('a').map((x) => x.name);
    expect(data.added).toEqual(
      tools('b')
        .slice(0, 20)
        .map((x) => x.name),
    );
    expect(data.removed).toEqual(sorted.slice(250, 270));
    expect(data.changed).toEqual(sorted.slice(0, 20));
    expect(stored).toBeLessThan(60_000);
    expect(read).toBeLessThan(60_000);

    // A diff of a few names is named whole, nothing counted.
    server.state.rawToolsList = () => ({ result: { tools: [...tools('a', 'e').slice(0, 250), ...tools('b').slice(0, 249)] } });
    await t.http
      .post(`/api/v1/mcp-connections/${created.body.id}/sync`)
      .set(...admin())
      .expect(200);
    const few = (await lastSynced(created.body.id)).data;
    expect(few).toMatchObject({ added: [], removed: [tools('b')[249].name], changed: [] });
    expect(few).not.toHaveProperty('removedOmitted');
  });
});
