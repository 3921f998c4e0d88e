import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { PAGE_BYTE_BUDGET } from '../src/common/pagination';
import { bearer, createOrg, createTestApp, TestApp, TestOrg } from './support/test-app';

/**
 * A list whose rows can be large ends its page in the database, at the byte budget: a list read
 * its limit + 1 rows and cut the page in the node, so 200 runs of a 1 MB transcript put 200 MB in
 * the node's memory for one `GET /runs?limit=200`. Each row below weighs about 1 MB, of content
 * that compresses a thousandfold (a bound on the compressed size would let all of them through).
 */
describe('pages of large rows end in the database', () => {
  let t: TestApp;
  let ds: DataSource;
  const ROWS = 8;
  const MB = 1_000_000;
  const big = (i: number) => `${i}`.padEnd(MB, 'x');

  beforeAll(async () => {
    t = await createTestApp();
    ds = t.app.get(DataSource);
  }, 180_000);
  afterAll(() => t.close());

  /** An agent with a published version 1, for the rows that name one. */
  async function publishedAgent(o: TestOrg): Promise<string> {
    const a = await t.http
      .post('/api/v1/agents')
      .set(...bearer(o.keys.builder))
      .send({ slug: `paged-${randomUUID().slice(0, 8)}`, name: 'Paged' })
      .expect(201);
    await t.http
      .post(`/api/v1/agents/${a.body.id}/publish`)
      .set(...bearer(o.keys.builder))
      .expect(201);
    return a.body.id;
  }

  /** Writes ROWS large rows; answers the list's path and the token that reads it. */
  const seeds: Record<string, (o: TestOrg) => Promise<{ path: string; token: string }>> = {
    runs: async (o) => {
      const agentId = await publishedAgent(o);
      for (let i = 0; i < ROWS; i++) {
        await ds.query(
          `INSERT INTO run (id, org_id, agent_id, version, status, input, messages, requested_by) VALUES ($1, $2, $3, 1, 'succeeded', 'hi', $4::jsonb, $5)`,
          [randomUUID(), o.id, agentId, JSON.stringify([{ role: 'user', content: big(i) }]), o.keyIds.agent],
        );
      }
      return { path: '/api/v1/runs', token: o.keys.viewer };
    },
    agents: async (o) => {
      for (let i = 0; i < ROWS; i++) {
        await ds.query(`INSERT INTO agent (id, org_id, slug, name, draft) VALUES ($1, $2, $3, 'Big', $4::jsonb)`, [
          randomUUID(),
          o.id,
          `big-${i}`,
          JSON.stringify({ instructions: big(i), capabilities: [] }),
        ]);
      }
      return { path: '/api/v1/agents', token: o.keys.viewer };
    },
    versions: async (o) => {
      const agentId = await publishedAgent(o);
      for (let v = 2; v <= ROWS + 1; v++) {
        await ds.query(
          `INSERT INTO agent_version (org_id, agent_id, version, spec, spec_hash, tool_digests, content_hash, published_by)
           SELECT org_id, agent_id, $3, jsonb_set(spec, '{instructions}', to_jsonb($4::text)), spec_hash, tool_digests, $5, published_by
             FROM agent_version WHERE org_id = $1 AND agent_id = $2 AND version = 1`,
          [o.id, agentId, v, big(v), `content-${v}`],
        );
      }
      return { path: `/api/v1/agents/${agentId}/versions`, token: o.keys.viewer };
    },
    toolCalls: async (o) => {
      const agentId = await publishedAgent(o);
      for (let i = 0; i < ROWS; i++) await insertCall(o, agentId, 'succeeded', i);
      return { path: '/api/v1/tool-calls', token: o.keys.viewer };
    },
    approvals: async (o) => {
      const agentId = await publishedAgent(o);
      for (let i = 0; i < ROWS; i++) {
        const callId = await insertCall(o, agentId, 'pending_approval', i);
        await ds.query(
          `INSERT INTO approval (id, org_id, tool_call_id, agent_id, version, tool, capability_id, tool_id, arguments_hash, reason, status, requested_by, expires_at)
           VALUES ($1, $2, $3, $4, 1, 'clock__now', 'clock', 'now', 'h', 'side_effecting', 'pending', $5, now() + interval '1 day')`,
          [randomUUID(), o.id, callId, agentId, o.keyIds.agent],
        );
      }
      return { path: '/api/v1/approvals', token: o.keys.viewer };
    },
    auditEvents: async (o) => {
      for (let i = 0; i < ROWS; i++) {
        await ds.query(
          `INSERT INTO audit_event (id, org_id, type, actor_type, actor_id, target_type, target_id, data)
           VALUES ($1, $2, 'mcp_connection.synced', 'api_key', 'k', 'mcp_connection', 'c', $3::jsonb)`,
          [randomUUID(), o.id, JSON.stringify({ added: [big(i)] })],
        );
      }
      return { path: '/api/v1/audit-events', token: o.keys.admin };
    },
    skills: async (o) => {
      for (let i = 0; i < ROWS; i++) {
        await ds.query(`INSERT INTO skill (id, org_id, name, description, instructions) VALUES ($1, $2, $3, 'd', $4)`, [randomUUID(), o.id, `s${i}`, big(i)]);
      }
      return { path: '/api/v1/skills', token: o.keys.viewer };
    },
    documents: async (o) => {
      const collection = await t.http
        .post('/api/v1/knowledge/collections')
        .set(...bearer(o.keys.builder))
        .send({ name: 'big' })
        .expect(201);
      for (let i = 0; i < ROWS; i++) {
        await ds.query(`INSERT INTO knowledge_document (id, org_id, collection_id, title, content, metadata) VALUES ($1, $2, $3, $4, 'c', $5::jsonb)`, [
          randomUUID(),
          o.id,
          collection.body.id,
          `d${i}`,
          JSON.stringify({ note: big(i) }),
        ]);
      }
      return { path: `/api/v1/knowledge/collections/${collection.body.id}/documents`, token: o.keys.viewer };
    },
    mcpConnections: async (o) => {
      for (let i = 0; i < ROWS; i++) {
        await ds.query(
          `INSERT INTO mcp_connection (id, org_id, server, name, url, status, tools, tools_digest, synced_at)
           VALUES ($1, $2, 'remote', $3, $4, 'ready', $5::jsonb, encode(sha256(convert_to($5::jsonb::text, 'UTF8')), 'hex'), now())`,
          [
            randomUUID(),
            o.id,
            `c${i}`,
            'https://mcp.example.com/mcp',
            JSON.stringify([{ name: 'search', description: big(i), inputSchema: { type: 'object' } }]),
          ],
        );
      }
      return { path: '/api/v1/mcp-connections', token: o.keys.admin };
    },
  };

  async function insertCall(o: TestOrg, agentId: string, status: string, i: number): Promise<string> {
    const id = randomUUID();
    await ds.query(
      `INSERT INTO tool_call (id, org_id, agent_id, version, tool, capability_id, tool_id, entry_point, arguments, arguments_hash, status, requested_by)
       VALUES ($1, $2, $3, 1, 'clock__now', 'clock', 'now', 'rest', $4::jsonb, 'h', $5, $6)`,
      [id, o.id, agentId, JSON.stringify({ text: big(i) }), status, o.keyIds.agent],
    );
    return id;
  }

  /** The largest answer the database sent the node while `work` ran, in bytes of JSON. */
  async function largestAnswer<T>(work: () => Promise<T>): Promise<{ result: T; bytes: number }> {
    const query = ds.query.bind(ds);
    let bytes = 0;
    const spy = jest.spyOn(ds, 'query').mockImplementation(async (...args: Parameters<DataSource['query']>) => {
      const answer: unknown = await query(...args);
      bytes = Math.max(bytes, Buffer.byteLength(JSON.stringify(answer) ?? ''));
      return answer;
    });
    try {
      return { result: await work(), bytes };
    } finally {
      spy.mockRestore();
    }
  }

  it.each(Object.keys(seeds))('%s: each page reads at most the budget and one row from the database, and the pages hold every row once', async (list) => {
    const o = await createOrg(t);
    const { path, token } = await seeds[list](o);
    const all = await t.http
      .get(path)
      .query({ limit: 1 })
      .set(...bearer(token))
      .expect(200);
    const expected: string[] = [];
    for (let cursor: string | null = all.body.nextCursor, page = all.body; ;) {
      expected.push(...page.items.map((i: { id?: string; version?: number }) => String(i.id ?? i.version)));
      if (!cursor) break;
      page = (
        await t.http
          .get(path)
          .query({ limit: 1, cursor })
          .set(...bearer(token))
          .expect(200)
      ).body;
      cursor = page.nextCursor;
    }
    expect(expected.length).toBeGreaterThanOrEqual(ROWS);

    const seen: string[] = [];
    const sizes: number[] = [];
    let cursor: string | null = null;
    do {
      const { result, bytes } = await largestAnswer(() =>
        t.http
          .get(path)
          .query({ limit: 200, ...(cursor ? { cursor } : {}) })
          .set(...bearer(token))
          .expect(200),
      );
      expect(result.body.items.length).toBeGreaterThanOrEqual(1);
      // The budget, the row that passes it, and the small fields of the others.
      expect(bytes).toBeLessThan(PAGE_BYTE_BUDGET + MB + 64 * 1024);
      seen.push(...result.body.items.map((i: { id?: string; version?: number }) => String(i.id ?? i.version)));
      sizes.push(result.body.items.length);
      cursor = result.body.nextCursor;
    } while (cursor && sizes.length < 2 * ROWS);
    // About 1 MB each: five fit in 4 MiB, the rest on the next page.
    expect(sizes.length).toBeGreaterThanOrEqual(2);
    expect(seen).toEqual(expected);
  });
});
