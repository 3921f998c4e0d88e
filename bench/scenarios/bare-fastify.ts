import { runStandalone } from '../lib/standalone';
import type { ThroughputScenario } from '../lib/throughput';

export const bareFastify: ThroughputScenario = {
  id: 'bare-fastify',
  name: 'bare Fastify {}',
  description: 'Fastify answering `{}` with no logging, hooks or database: the floor of this machine and runtime.',
  async prepare(session) {
    const server = await session.bare();
    return { url: server.url, serverPid: server.pid, connections: session.options.connections, requests: [{ method: 'GET', path: '/' }] };
  },
};

if (require.main === module) void runStandalone('bare Fastify', [bareFastify]);
