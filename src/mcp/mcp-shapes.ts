import { ProtocolErrorCode as McpErrorCode, type CallToolResult, type Tool } from '@modelcontextprotocol/server';
import type { OfferedTool } from '../agents/built-version';
import type { ApiError, ErrorCode } from '../common/api-error';
import type { ToolCallView } from '../tool-calls/tool-calls.dto';

/**
 * How our offered tools and tool calls look in MCP. Pure functions: the server only wires them
 * to the SDK, and the unit tests read them without a transport.
 */

/** The `_meta` key under which results carry the tool call they recorded (MCP reserves unprefixed `mcp`/`modelcontextprotocol` names only). */
export const CALL_META = 'capability-platform/toolCall';
/** The `_meta` key under which listed tools carry our own description of them. */
export const TOOL_META = 'capability-platform/tool';
/** The `_meta` key of `tools/call` params under which a client may name the run a call belongs to (per-run limits). */
export const RUN_ID_META = 'capability-platform/runId';

/** What the declaration says beyond the offered tool: its output shape and the two hints risk does not decide. */
export interface ToolFacts {
  /** JSON Schema of a successful result (from the declaration's `output`). */
  outputSchema?: Record<string, unknown>;
  idempotent?: boolean;
  openWorld?: boolean;
}

/**
 * MCP's behaviour hints, each explicit because MCP's defaults assume the worst (destructive,
 * open-world). Risk is the one fact review fixes, so it decides `readOnlyHint` and
 * `destructiveHint`; a read-only tool is idempotent by definition, another only when its
 * declaration says so; the open world is what the declaration says (vendor MCP tools always are).
 */
export function annotationsOf(tool: Pick<OfferedTool, 'name' | 'risk'>, facts: ToolFacts = {}): NonNullable<Tool['annotations']> {
  return {
    title: titleOf(tool.name),
    readOnlyHint: tool.risk === 'read_only',
    destructiveHint: tool.risk === 'destructive',
    idempotentHint: tool.risk === 'read_only' || facts.idempotent === true,
    openWorldHint: facts.openWorld === true,
  };
}

/**
 * An offered tool as MCP lists it, with its annotations (above) and, when the tool declares the
 * shape of its result, that shape as `outputSchema` (successful results then carry it as
 * `structuredContent`). `$schema` is dropped like in the provider formats: MCP's default dialect
 * is the one we generate (2020-12), and clients pass the schema on to model providers, some of
 * which refuse the keyword.
 */
export function toMcpTool(tool: OfferedTool, facts: ToolFacts = {}): Tool {
  const { $schema: _dialect, ...inputSchema } = tool.inputSchema;
  const title = titleOf(tool.name);
  const output = facts.outputSchema ? withoutDialect(facts.outputSchema) : undefined;
  return {
    name: tool.name,
    title,
    description: tool.description,
    inputSchema: inputSchema as Tool['inputSchema'],
    ...(output ? { outputSchema: output as Tool['outputSchema'] } : {}),
    annotations: annotationsOf(tool, facts),
    _meta: { [TOOL_META]: { capabilityId: tool.capabilityId, toolId: tool.toolId, risk: tool.risk, requiresApproval: tool.requiresApproval } },
  };
}

function withoutDialect(schema: Record<string, unknown>): Record<string, unknown> {
  const { $schema: _dialect, ...rest } = schema;
  return rest;
}

/** `search_notes` -> `Search notes`; `fetchInvoice` -> `Fetch invoice`. */
export function titleOf(name: string): string {
  const words = name
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .split(/[\s_-]+/)
    .filter((w) => w !== '')
    .map((w) => w.toLowerCase());
  const text = words.join(' ');
  return text.charAt(0).toUpperCase() + text.slice(1);
}

/** What a call that still waits says to the model: what happened, and how to learn the decision. */
export interface PendingFacts {
  expiresAt?: string;
}

/**
 * A tool call as MCP answers it. A tool's result is text (a string as is, anything else as its
 * JSON) and, when it is structured, `structuredContent` (an object as is, an array as
 * `{ items }`: MCP's structured content is an object). A failure, a rejection and an expiry are
 * `isError` with a message the model can act on. A call still waiting for a person is not an
 * error: nothing failed, and the same call made again hands over the decision.
 */
export function toCallToolResult(call: ToolCallView, pending: PendingFacts = {}): CallToolResult {
  const meta = { [CALL_META]: callMeta(call) };
  switch (call.status) {
    case 'succeeded': {
      const content: CallToolResult['content'] = [{ type: 'text', text: typeof call.result === 'string' ? call.result : JSON.stringify(call.result ?? null) }];
      if (call.resultTruncated) {
        content.push({
          type: 'text',
          text: `The result was cut to the tool's output budget.${call.resultRef ? ` The whole result is kept at ${call.resultRef}.` : ''}`,
        });
      }
      if (call.argumentsEdited) {
        // The model's history must stay true: what ran is not what it asked for.
        content.push({ type: 'text', text: `An approver changed the arguments before the call ran. It ran with: ${JSON.stringify(call.executedArguments)}` });
      }
      const structured = call.resultTruncated ? undefined : structuredOf(call.result);
      return { content, ...(structured ? { structuredContent: structured } : {}), _meta: meta };
    }
    case 'failed':
      return errorResult(`${call.error?.message ?? 'The tool failed.'} (${call.error?.code ?? 'tool_error'})`, meta);
    case 'rejected':
      return errorResult(`A person rejected this call, so it did not run. Their reason: ${call.error?.message ?? '(none given)'}`, meta);
    case 'expired':
      return errorResult('Nobody decided on the approval of this call before it expired, so it did not run. Call the tool again to ask again.', meta);
    case 'running':
      return {
        content: [
          { type: 'text', text: 'A person approved this call and it is running now. Call the tool again with exactly the same arguments to get its result.' },
        ],
        _meta: meta,
      };
    case 'pending_approval':
      return {
        content: [
          {
            type: 'text',
            text:
              `This call needs a person's approval and is still waiting for it (approval ${call.approvalId}` +
              `${pending.expiresAt ? `, which expires at ${pending.expiresAt}` : ''}). Nothing has run. ` +
              'Call the tool again later with exactly the same arguments to get the decision; that does not ask again.',
          },
        ],
        _meta: meta,
      };
  }
}

/**
 * Refusals that MCP answers as JSON-RPC errors, keyed by our error code (never by HTTP status):
 * MCP makes an unknown tool a protocol error; every other refusal of `tools/call` is a result
 * for the model to read, and outside `tools/call` a refusal is an invalid request.
 */
const PROTOCOL_ERRORS: Partial<Record<ErrorCode, McpErrorCode>> = { unknown_tool: McpErrorCode.InvalidParams };

/** The JSON-RPC error code of a refusal of `tools/call`, or undefined when the model should read it as a result. */
export function protocolErrorOfCall(code: ErrorCode): McpErrorCode | undefined {
  return PROTOCOL_ERRORS[code];
}

/** The JSON-RPC error code of a refusal outside `tools/call`. */
export function protocolErrorOf(code: ErrorCode): McpErrorCode {
  return PROTOCOL_ERRORS[code] ?? McpErrorCode.InvalidRequest;
}

/** The executor's refusals that the model can act on (invalid arguments, a guard) as `isError` results. */
export function refusalResult(error: ApiError): CallToolResult {
  if (error.code === 'invalid_arguments' && error.errors?.length) {
    const lines = error.errors.map((e) => `- ${fieldOf(e.path)}: ${e.message}`);
    return errorResult(`The arguments are invalid, so nothing ran. Fix these and call again:\n${lines.join('\n')}`, {
      [CALL_META]: { status: 'refused', code: error.code, errors: error.errors.map((e) => ({ ...e, path: fieldOf(e.path) })) },
    });
  }
  return errorResult(`${error.detail} (${error.code})`, { [CALL_META]: { status: 'refused', code: error.code } });
}

/** The executor names fields from the request body (`arguments.query`); the model only knows `query`. */
function fieldOf(path: string): string {
  if (path === 'arguments') return '(the arguments as a whole)';
  return path.startsWith('arguments.') ? path.slice('arguments.'.length) : path;
}

function errorResult(text: string, meta: Record<string, unknown>): CallToolResult {
  return { content: [{ type: 'text', text }], isError: true, _meta: meta };
}

function structuredOf(result: unknown): Record<string, unknown> | undefined {
  if (Array.isArray(result)) return { items: result };
  if (result !== null && typeof result === 'object') return result as Record<string, unknown>;
  return undefined;
}

function callMeta(call: ToolCallView): Record<string, unknown> {
  return {
    id: call.id,
    status: call.status,
    ...(call.approvalId ? { approvalId: call.approvalId } : {}),
    ...(call.error ? { error: call.error } : {}),
    ...(call.resultTruncated ? { resultTruncated: true } : {}),
    ...(call.resultRef ? { resultRef: call.resultRef } : {}),
  };
}
