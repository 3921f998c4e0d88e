import { startFixtureMcpServer } from '../../test/support/mcp-fixture-server';
import { expectStatus } from '../lib/http';
import type { BenchSession } from '../lib/session';
import { runStandalone } from '../lib/standalone';
import type { ThroughputScenario } from '../lib/throughput';

/** What one version may bind (20 connections) of lists of what a server may list (500 tools), within the 4 MiB bound together. */
const CONNECTIONS = 20;
const TOOLS = 500;
const TOOL = 'c19_t499';

/** One agent a session: the rows share the product's organization, where connection names are unique. */
const prepared = new WeakMap<BenchSession, ReturnType<typeof prepareWideAgent>>();

function wideAgentOf(session: BenchSession) {
  if (!prepared.has(session)) prepared.set(session, prepareWideAgent(session));
  return prepared.get(session)!;
}

/** An organization with a published agent binding 20 connections of 500 tools, its servers on loopback in the benchmark's process. */
async function prepareWideAgent(session: BenchSession) {
  const product = await session.product();
  const { org } = product;
  const as = (role: keyof typeof org.keys) => product.api.as(org.keys[role]);
  expectStatus(await product.api.put(`/api/v1/orgs/${org.id}/scopes`, { scopes: [...new Set([...org.scopes, 'mcp:remote'])] }), 200, 'grant mcp:remote');
  const ids: string[] = [];
  for (let c = 0; c < CONNECTIONS; c++) {
    const tools = Array.from({ length: TOOLS }, (_, i) => ({
      name: `c${c}_t${i}`,
      description: `Tool ${i} of server ${c}. ${'Looks things up. '.repeat(14)}`,
      inputSchema: { type: 'object', properties: { q: { type: 'string' } } },
    }));
    const server = await startFixtureMcpServer({
      rawToolsList: () => ({ result: { tools } }),
      rawToolsCall: () => ({ result: { content: [{ type: 'text', text: 'found' }] } }),
    });
    session.defer(() => server.close());
    const connection = await as('admin').post<{ id: string }>('/api/v1/mcp-connections', { server: 'remote', name: `wide-${c}`, url: server.url });
    ids.push(expectStatus(connection, 201, 'connect').body.id);
  }
  expectStatus(await as('admin').put(`/api/v1/mcp-connections/${ids.at(-1)}/tools/${TOOL}/risk`, { risk: 'read_only' }), 200, 'read-only risk');
  const agent = expectStatus(await as('builder').post<{ id: string }>('/api/v1/agents', { slug: `wide-${Date.now()}`, name: 'Wide' }), 201, 'agent').body;
  const spec = { instructions: '', capabilities: [], mcpServers: ids.map((connection) => ({ connection })) };
  expectStatus(await as('builder').put(`/api/v1/agents/${agent.id}/draft`, spec), 200, 'draft');
  expectStatus(await as('builder').post(`/api/v1/agents/${agent.id}/publish`), 201, 'publish');
  return { product, org, as, agentId: agent.id };
}

export const wideAgent: ThroughputScenario = {
  id: 'wide-agent',
  name: 'POST .../tool-calls (an agent binding 10,000 MCP tools)',
  description:
    'A read-only call of one MCP tool of an agent binding 20 connections of 500 tools each, the most a version may bind (attack round 12, J-F2): what a build of such a version costs a call. The servers answer on loopback in the benchmark process.',
  async prepare(session) {
    const { product, org, as, agentId } = await wideAgentOf(session);
    const path = `/api/v1/agents/${agentId}/tool-calls`;
    const body = { tool: TOOL, arguments: { q: 'x' } };
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

export const wideVersion: ThroughputScenario = {
  id: 'wide-version',
  name: 'GET .../versions/latest (an agent binding 10,000 MCP tools)',
  description:
    "A viewer's read of the latest version of the agent of `wide-agent`: its 10,000 tool digests and the drift of each since publish (attack round 15, Q-F4's rest).",
  async prepare(session) {
    const { product, org, as, agentId } = await wideAgentOf(session);
    const path = `/api/v1/agents/${agentId}/versions/latest`;
    expectStatus(await as('viewer').get(path), 200, `GET ${path}`);
    return {
      url: product.server.url,
      serverPid: product.server.pid,
      connections: session.options.connections,
      requests: [{ method: 'GET', path, headers: { authorization: `Bearer ${org.keys.viewer}` } }],
    };
  },
};

export const wideValidate: ThroughputScenario = {
  id: 'wide-validate',
  name: 'POST .../draft/validate (an agent binding 10,000 MCP tools)',
  description: "A builder's check of the draft of the agent of `wide-agent`, unchanged since its publish (attack round 15, Q-F4's rest).",
  async prepare(session) {
    const { product, org, as, agentId } = await wideAgentOf(session);
    const path = `/api/v1/agents/${agentId}/draft/validate`;
    const check = expectStatus(await as('builder').post<{ valid: boolean }>(path), 200, `POST ${path}`);
    if (!check.body.valid) throw new Error(`the draft is not valid: ${JSON.stringify(check.body).slice(0, 300)}`);
    return {
      url: product.server.url,
      serverPid: product.server.pid,
      connections: session.options.connections,
      requests: [{ method: 'POST', path, headers: { authorization: `Bearer ${org.keys.builder}` } }],
    };
  },
};

if (require.main === module) void runStandalone('agent binding 10,000 MCP tools', [wideAgent, wideVersion, wideValidate]);
