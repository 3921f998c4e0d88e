import { expectStatus } from '../lib/http';
import { UnitTimer } from '../lib/load';
import { runStandalone } from '../lib/standalone';
import { Unavailable, type ThroughputScenario } from '../lib/throughput';

export const approvalCycle: ThroughputScenario = {
  id: 'approval-cycle',
  name: 'approval cycle (cycles/s)',
  description:
    'A mutating call end to end, as three requests on one connection: POST .../tool-calls (202, pending), POST /approvals/{id}/approve as the approver key (the tool runs), GET /tool-calls/{id}. A row counts whole cycles; its latency is the whole cycle.',
  async prepare(session) {
    const product = await session.product();
    const agent = await session.agent();
    const agentKey = product.org.keys.agent;
    const approverKey = product.org.keys.approver;
    const path = `/api/v1/agents/${agent.id}/tool-calls`;
    let n = 0;
    const body = () => JSON.stringify({ tool: agent.mutatingTool.name, arguments: agent.mutatingTool.arguments(++n) });

    const first = await product.api.as(agentKey).post<{ id: string; approvalId: string; status: string }>(path, JSON.parse(body()));
    if (first.status === 404 && (first.body as unknown as { code?: string }).code !== 'unknown_tool')
      throw new Unavailable('POST /agents/{id}/tool-calls is not on this branch yet');
    expectStatus(first, 202, 'request a mutating call');
    const approved = await product.api.as(approverKey).post<{ toolCall: { status: string } }>(`/api/v1/approvals/${first.body.approvalId}/approve`, {});
    if (approved.status === 404) throw new Unavailable('POST /approvals/{id}/approve is not on this branch yet');
    expectStatus(approved, 200, 'approve');
    if (approved.body.toolCall.status !== 'succeeded') throw new Error(`the approved call did not succeed: ${JSON.stringify(approved.body).slice(0, 300)}`);

    const timer = new UnitTimer();
    const json = { 'content-type': 'application/json' };
    return {
      url: product.server.url,
      serverPid: product.server.pid,
      connections: session.options.connections,
      requestsPerUnit: 3,
      unitTimer: timer,
      requests: [
        {
          method: 'POST',
          path,
          headers: { authorization: `Bearer ${agentKey}`, ...json },
          setupRequest(request, context) {
            timer.mark(context);
            return { ...request, body: body() };
          },
          onResponse(status, text, context) {
            if (status !== 202) return;
            const call = JSON.parse(text) as { id: string; approvalId: string };
            context.callId = call.id;
            context.approvalId = call.approvalId;
          },
        },
        {
          method: 'POST',
          headers: { authorization: `Bearer ${approverKey}`, ...json },
          body: '{}',
          // No pending approval (the request failed): start the cycle again.
          setupRequest: (request, context) => (context.approvalId ? { ...request, path: `/api/v1/approvals/${context.approvalId}/approve` } : null),
        },
        {
          method: 'GET',
          headers: { authorization: `Bearer ${agentKey}` },
          setupRequest: (request, context) => (context.callId ? { ...request, path: `/api/v1/tool-calls/${context.callId}` } : null),
          onResponse(status, _text, context) {
            if (status === 200) timer.done(context);
          },
        },
      ],
    };
  },
};

if (require.main === module) void runStandalone('approval cycle', [approvalCycle]);
