import { expectStatus } from '../lib/http';
import { runStandalone } from '../lib/standalone';
import type { ThroughputScenario } from '../lib/throughput';

export const catalog: ThroughputScenario = {
  id: 'catalog',
  name: 'GET /agents/capabilities',
  description:
    'The capability catalog read with an organization key (builder): authentication (one key lookup), the catalog computed at boot, `available` per capability for the organization, and its ETag.',
  async prepare(session) {
    const product = await session.product();
    const token = product.org.keys.builder;
    expectStatus(await product.api.as(token).get('/api/v1/agents/capabilities'), 200, 'GET /api/v1/agents/capabilities');
    return {
      url: product.server.url,
      serverPid: product.server.pid,
      connections: session.options.connections,
      requests: [{ method: 'GET', path: '/api/v1/agents/capabilities', headers: { authorization: `Bearer ${token}` } }],
    };
  },
};

if (require.main === module) void runStandalone('catalog', [catalog]);
