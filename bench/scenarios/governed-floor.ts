import { Api, expectStatus } from '../lib/http';
import { runStandalone } from '../lib/standalone';
import type { ThroughputScenario } from '../lib/throughput';

export const governedFloor: ThroughputScenario = {
  id: 'governed-floor',
  name: 'governed floor (Fastify + pg)',
  description:
    "bench/floor/governed-floor.ts: a hand-written Fastify + pg handler doing the least SQL a governed, audited call can do: the key looked up by hash with its organization's scopes, then one statement inserting the call and its two audit events (one commit).",
  async prepare(session) {
    const floor = await session.floor();
    const body = { tool: 'echo', arguments: { query: 'benchmark' } };
    const check = await new Api(floor.server.url, floor.token).post('/floor/tool-calls', body);
    expectStatus(check, 200, 'governed floor call');
    return {
      url: floor.server.url,
      serverPid: floor.server.pid,
      connections: session.options.connections,
      requests: [
        {
          method: 'POST',
          path: '/floor/tool-calls',
          headers: { authorization: `Bearer ${floor.token}`, 'content-type': 'application/json' },
          body: JSON.stringify(body),
        },
      ],
    };
  },
};

if (require.main === module) void runStandalone('governed floor', [governedFloor]);
