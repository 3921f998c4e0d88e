import type { ToolCallView } from '../tool-calls/tool-calls.dto';
import { createTaskResult, TASK_DECLINED, taskOf } from './mcp-tasks';

const call = (over: Partial<ToolCallView> = {}): ToolCallView => ({
  id: '0b7e6c1e-6f55-4a35-9b1c-1f2a3b4c5d6e',
  agentId: 'a1',
  version: 1,
  tool: 'write_note',
  capabilityId: 'notes',
  toolId: 'write',
  runId: null,
  arguments: { text: 'x' },
  argumentsHash: 'h',
  status: 'pending_approval',
  approvalId: 'ap1',
  argumentsEdited: false,
  entryPoint: 'mcp',
  requestedBy: 'k1',
  createdAt: '2026-01-01T00:00:00.000Z',
  completedAt: null,
  ...over,
});

describe('approvals as MCP tasks', () => {
  it('a waiting call is a task handle: working, the tool call id, where a person decides', () => {
    const handle = createTaskResult(call(), { expiresAt: '2026-01-02T00:00:00.000Z' }) as unknown as Record<string, unknown>;
    expect(handle).toMatchObject({
      resultType: 'task',
      taskId: call().id,
      status: 'working',
      createdAt: '2026-01-01T00:00:00.000Z',
      lastUpdatedAt: '2026-01-01T00:00:00.000Z',
      ttlMs: null,
      pollIntervalMs: 2000,
    });
    expect(handle.statusMessage).toBe(
      'Waiting for a person to decide on approval ap1, which expires at 2026-01-02T00:00:00.000Z. Nothing has run. ' +
        'An approver decides with POST /api/v1/approvals/ap1/approve or /reject.',
    );
    expect(handle).not.toHaveProperty('result');
  });

  it.each([
    ['pending_approval', 'working'],
    ['running', 'working'],
    ['succeeded', 'completed'],
    ['failed', 'completed'],
    ['rejected', 'failed'],
    ['expired', 'failed'],
  ] as const)('a %s call is a %s task', (status, taskStatus) => {
    expect(taskOf(call({ status }), {})).toMatchObject({ resultType: 'complete', status: taskStatus });
  });

  it("completed carries the tool's result; a tool's own failure is a completed task whose result is isError", () => {
    const ok = taskOf(call({ status: 'succeeded', result: { n: 1 }, completedAt: '2026-01-01T00:01:00.000Z' }), {});
    expect(ok).toMatchObject({ lastUpdatedAt: '2026-01-01T00:01:00.000Z', result: { structuredContent: { n: 1 } } });
    const broke = taskOf(call({ status: 'failed', error: { code: 'note_not_found', message: 'No note.' } }), {});
    expect(broke).toMatchObject({ status: 'completed', result: { isError: true } });
  });

  it('a rejection or an expiry fails the task with the reason, as status message and error', () => {
    const rejected = taskOf(call({ status: 'rejected', error: { code: 'rejected', message: 'Not today.' } }), {});
    expect(rejected.statusMessage).toBe('A person rejected this call, so it did not run. Their reason: Not today.');
    expect(rejected.error).toMatchObject({ code: TASK_DECLINED, message: rejected.statusMessage });
    const expired = taskOf(call({ status: 'expired' }), {});
    expect(expired.error).toMatchObject({ code: TASK_DECLINED, message: expect.stringMatching(/expired/) });
  });
});
