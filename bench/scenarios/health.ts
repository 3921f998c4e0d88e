import { expectStatus } from '../lib/http';
import { runStandalone } from '../lib/standalone';
import type { ThroughputScenario } from '../lib/throughput';

export const health: ThroughputScenario = {
  id: 'health',
  name: 'GET /health (Nest)',
  description:
    'The product server answering its liveness route: Nest on Fastify with the global guard, request ids and request logging, no database. The framework floor.',
  async prepare(session) {
    const product = await session.product();
    expectStatus(await product.api.get('/health'), 200, 'GET /health');
    return { url: product.server.url, serverPid: product.server.pid, connections: session.options.connections, requests: [{ method: 'GET', path: '/health' }] };
  },
};

if (require.main === module) void runStandalone('GET /health', [health]);
