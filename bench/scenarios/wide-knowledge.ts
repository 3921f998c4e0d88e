import { startFixtureMcpServer } from '../../test/support/mcp-fixture-server';
import { expectStatus } from '../lib/http';
import { runStandalone } from '../lib/standalone';
import type { ThroughputScenario } from '../lib/throughput';

/** As attack round 16 (T-F4) bound them: 200 collections whose descriptions are 2,000 4-byte characters. */
const COLLECTIONS = 200;
const DESCRIPTION = '\u{1F4DA}'.repeat(1_999) + '.';

/**
 * A read-only MCP tool call of an agent that also binds 200 knowledge collections: every build of
 * the version resolves them (their counts read, their texts kept by the node), and before session
 * 41 also composed the 1.76 MB knowledge prompt from them, which no tool call reads.
 */
export const wideKnowledge: ThroughputScenario = {
  id: 'wide-knowledge',
  name: 'POST .../tool-calls (an agent binding 200 collections)',
  description:
    'A read-only call of an MCP tool by an agent that binds 200 knowledge collections with 2,000-character descriptions of 4-byte characters (attack round 16, T-F4): what building such a version costs a call. The server answers on loopback in the benchmark process.',
  async prepare(session) {
    const product = await session.product();
    const { org } = product;
    const as = (role: keyof typeof org.keys) => product.api.as(org.keys[role]);
    const scopes = [...new Set([...org.scopes, 'mcp:remote', 'knowledge:read'])];
    expectStatus(await product.api.put(`/api/v1/orgs/${org.id}/scopes`, { scopes }), 200, 'grant scopes');
    const server = await startFixtureMcpServer({
      rawToolsList: () => ({ result: { tools: [{ name: 'look_up', description: 'Looks it up.', inputSchema: { type: 'object' } }] } }),
      rawToolsCall: () => ({ result: { content: [{ type: 'text', text: 'found' }] } }),
    });
    session.defer(() => server.close());
    const stamp = Date.now();
    const connection = expectStatus(
      await as('admin').post<{ id: string }>('/api/v1/mcp-connections', { server: 'remote', name: `shelf-${stamp}`, url: server.url }),
      201,
      'connect',
    ).body.id;
    expectStatus(await as('admin').put(`/api/v1/mcp-connections/${connection}/tools/look_up/risk`, { risk: 'read_only' }), 200, 'read-only risk');
    const collections: string[] = [];
    for (let i = 0; i < COLLECTIONS; i++) {
      const made = await as('builder').post<{ id: string }>('/api/v1/knowledge/collections', { name: `Shelf ${stamp} ${i}`, description: DESCRIPTION });
      collections.push(expectStatus(made, 201, 'collection').body.id);
    }
    const agent = expectStatus(await as('builder').post<{ id: string }>('/api/v1/agents', { slug: `shelves-${stamp}`, name: 'Shelves' }), 201, 'agent').body;
    const spec = {
      instructions: '',
      capabilities: [{ id: 'knowledge' }],
      resources: { knowledgeCollections: collections },
      mcpServers: [{ connection }],
    };
    expectStatus(await as('builder').put(`/api/v1/agents/${agent.id}/draft`, spec), 200, 'draft');
    expectStatus(await as('builder').post(`/api/v1/agents/${agent.id}/publish`), 201, 'publish');
    const path = `/api/v1/agents/${agent.id}/tool-calls`;
    const body = { tool: 'look_up', arguments: {} };
    const check = expectStatus(await as('agent').post<{ status: string }>(path, body), 200, `POST ${path}`);
    if (check.body.status !== 'succeeded') throw new Error(`the call did not succeed: ${JSON.stringify(check.body).slice(0, 300)}`);
    return {
      url: product.server.url,
      serverPid: product.server.pid,
      connections: session.options.connections,
      requests: [
        { method: 'POST', path, headers: { authorization: `Bearer ${org.keys.agent}`, 'content-type': 'application/json' }, body: JSON.stringify(body) },
      ],
    };
  },
};

if (require.main === module) void runStandalone('agent binding 200 knowledge collections', [wideKnowledge]);
