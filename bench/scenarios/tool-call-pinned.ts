import { expectStatus } from '../lib/http';
import { runStandalone } from '../lib/standalone';
import type { ThroughputScenario } from '../lib/throughput';

export const toolCallPinned: ThroughputScenario = {
  id: 'tool-call-pinned',
  name: 'POST .../tool-calls (read-only, version pinned)',
  description:
    "The same call naming the version it was offered (`version: 1`), as a runtime that read the manifest would: a published version is immutable and kept per process, so the call skips the read of the agent's `latest` pointer.",
  async prepare(session) {
    const product = await session.product();
    const agent = await session.agent();
    const token = product.org.keys.agent;
    const path = `/api/v1/agents/${agent.id}/tool-calls`;
    const body = { tool: agent.readOnlyTool.name, arguments: agent.readOnlyTool.arguments, version: 1 };
    const check = expectStatus(await product.api.as(token).post<{ status: string; version: number }>(path, body), 200, `POST ${path}`);
    if (check.body.status !== 'succeeded' || check.body.version !== 1)
      throw new Error(`the pinned call did not succeed on version 1: ${JSON.stringify(check.body).slice(0, 300)}`);
    return {
      url: product.server.url,
      serverPid: product.server.pid,
      connections: session.options.connections,
      requests: [{ method: 'POST', path, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify(body) }],
    };
  },
};

if (require.main === module) void runStandalone('governed tool call, version pinned', [toolCallPinned]);
