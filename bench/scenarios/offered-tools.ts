import { expectStatus } from '../lib/http';
import { runStandalone } from '../lib/standalone';
import type { ThroughputScenario } from '../lib/throughput';

export const offeredTools: ThroughputScenario = {
  id: 'offered-tools',
  name: 'GET .../versions/latest/tools',
  description:
    'What an agent runtime reads before every turn: the latest published version built for the organization (resources resolved, capabilities built, overrides applied), as the agent key.',
  async prepare(session) {
    const product = await session.product();
    const agent = await session.agent();
    const token = product.org.keys.agent;
    const path = `/api/v1/agents/${agent.id}/versions/latest/tools`;
    const check = expectStatus(await product.api.as(token).get<{ items: { name: string }[] }>(path), 200, `GET ${path}`);
    if (!check.body.items.some((t) => t.name === agent.readOnlyTool.name)) throw new Error(`${path} does not offer ${agent.readOnlyTool.name}`);
    return {
      url: product.server.url,
      serverPid: product.server.pid,
      connections: session.options.connections,
      requests: [{ method: 'GET', path, headers: { authorization: `Bearer ${token}` } }],
    };
  },
};

if (require.main === module) void runStandalone('offered tools', [offeredTools]);
