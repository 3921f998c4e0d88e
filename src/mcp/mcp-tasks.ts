import { CLIENT_CAPABILITIES_META_KEY, type CallToolResult, type ServerContext, type StandardSchemaV1 } from '@modelcontextprotocol/server';
import type { ToolCallView } from '../tool-calls/tool-calls.dto';
import { CALL_META, PendingFacts, toCallToolResult } from './mcp-shapes';

/**
 * Approvals as MCP tasks (the Tasks extension of the 2026-07-28 revision, SEP-2663). A task is
 * never held in memory: its id is the tool call's id and its state is derived from the stored
 * tool call every time it is asked for, so it survives a restart and any node answers for it.
 * Pure mapping here; the service reads the call (through the executor's waiter) and wires it.
 */

export const TASKS_EXTENSION = 'io.modelcontextprotocol/tasks';
/** How often a client should ask: a person decides in seconds at best. */
export const TASK_POLL_INTERVAL_MS = 2000;
/** The JSON-RPC error of a task whose call a person rejected or let expire (an implementation-defined server error). */
export const TASK_DECLINED = -32000;

type Json = Record<string, unknown>;

/** `tasks/get` params, as the SDK wants them for a method it does not know: a Standard Schema. */
export const TASK_PARAMS: StandardSchemaV1<unknown, { taskId: string }> = {
  '~standard': {
    version: 1,
    vendor: 'capability-platform',
    validate: (value) =>
      typeof value === 'object' &&
      value !== null &&
      typeof (value as { taskId?: unknown }).taskId === 'string' &&
      (value as { taskId: string }).taskId.length <= 64
        ? { value: { taskId: (value as { taskId: string }).taskId } }
        : { issues: [{ message: 'params.taskId: expected a string' }] },
  },
};

/** Whether this request's client declared the Tasks extension (2026-07-28 requests carry their capabilities). */
export function declaresTasks(ctx: ServerContext): boolean {
  const capabilities = ctx.mcpReq.envelope?.[CLIENT_CAPABILITIES_META_KEY as keyof NonNullable<ServerContext['mcpReq']['envelope']>] as
    { extensions?: Record<string, unknown> } | undefined;
  const extensions = capabilities?.extensions;
  return typeof extensions === 'object' && extensions !== null && Object.hasOwn(extensions, TASKS_EXTENSION);
}

/** Where a person decides, for the status message: the approval and its REST routes. */
function waitingMessage(call: ToolCallView, pending: PendingFacts): string {
  if (call.status === 'running') return 'A person approved the call; the tool is running.';
  const expires = pending.expiresAt ? `, which expires at ${pending.expiresAt}` : '';
  return (
    `Waiting for a person to decide on approval ${call.approvalId}${expires}. Nothing has run. ` +
    `An approver decides with POST /api/v1/approvals/${call.approvalId}/approve or /reject.`
  );
}

function base(call: ToolCallView): Json {
  return {
    taskId: call.id,
    createdAt: call.createdAt,
    lastUpdatedAt: call.completedAt ?? call.createdAt,
    // The task is the tool call record, which is kept: no time-to-live.
    ttlMs: null,
    pollIntervalMs: TASK_POLL_INTERVAL_MS,
  };
}

/** The answer to `tools/call` when the call waits for a person: a task handle, `working`. */
export function createTaskResult(call: ToolCallView, pending: PendingFacts): CallToolResult {
  return {
    resultType: 'task',
    ...base(call),
    status: 'working',
    statusMessage: waitingMessage(call, pending),
    _meta: { [CALL_META]: { id: call.id, status: call.status, ...(call.approvalId ? { approvalId: call.approvalId } : {}) } },
  } as unknown as CallToolResult;
}

/**
 * The task as `tasks/get` answers it: `working` while undecided or running; `completed` with the
 * tool's result once it ran (a tool's own failure is a completed task whose result is `isError`,
 * as MCP says); `failed` when a person rejected the call (the reason in `statusMessage` and the
 * error) or let its approval expire: nothing ran, and calling the tool again asks again.
 */
export function taskOf(call: ToolCallView, pending: PendingFacts): Json {
  switch (call.status) {
    case 'pending_approval':
    case 'running':
      return { resultType: 'complete', ...base(call), status: 'working', statusMessage: waitingMessage(call, pending) };
    case 'succeeded':
    case 'failed':
      return { resultType: 'complete', ...base(call), status: 'completed', result: toCallToolResult(call) };
    case 'rejected':
    case 'expired': {
      const message = (toCallToolResult(call).content[0] as { text: string }).text;
      const data = { [CALL_META]: toCallToolResult(call)._meta?.[CALL_META] };
      return { resultType: 'complete', ...base(call), status: 'failed', statusMessage: message, error: { code: TASK_DECLINED, message, data } };
    }
  }
}
