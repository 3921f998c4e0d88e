import { expectStatus } from '../lib/http';
import { runStandalone } from '../lib/standalone';
import { Unavailable, type ThroughputScenario } from '../lib/throughput';

export const toolCall: ThroughputScenario = {
  id: 'tool-call',
  name: 'POST .../tool-calls (read-only)',
  description:
    'The governed hot path: a read-only tool called through POST /agents/{id}/tool-calls with the agent key (authentication, the version, scopes, argument validation, execution, the call persisted with its audit events). The tool is list_skills, which itself reads the bound skills.',
  async prepare(session) {
    const product = await session.product();
    const agent = await session.agent();
    const token = product.org.keys.agent;
    const path = `/api/v1/agents/${agent.id}/tool-calls`;
    const body = { tool: agent.readOnlyTool.name, arguments: agent.readOnlyTool.arguments };
    const check = await product.api.as(token).post<{ status: string }>(path, body);
    if (check.status === 404 && (check.body as unknown as { code?: string }).code !== 'unknown_tool')
      throw new Unavailable('POST /agents/{id}/tool-calls is not on this branch yet');
    expectStatus(check, 200, `POST ${path}`);
    if (check.body.status !== 'succeeded') throw new Error(`the read-only call did not succeed: ${JSON.stringify(check.body).slice(0, 300)}`);
    return {
      url: product.server.url,
      serverPid: product.server.pid,
      connections: session.options.connections,
      requests: [{ method: 'POST', path, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify(body) }],
    };
  },
};

if (require.main === module) void runStandalone('governed tool call', [toolCall]);
