import { Inject, Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { RequestHandlerExtra } from '@modelcontextprotocol/sdk/shared/protocol.js';
import {
  CallToolRequest,
  CallToolRequestSchema,
  CallToolResult,
  ErrorCode,
  ListToolsRequestSchema,
  ListToolsResult,
  McpError,
  ServerNotification,
  ServerRequest,
} from '@modelcontextprotocol/sdk/types.js';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { BuiltVersion } from '../agents/built-version';
import { AgentIdentity, VersionBuilder, VersionRow } from '../agents/version-builder.service';
import { ApiKeyPrincipal, RequestContext } from '../auth/principal';
import { ApiError } from '../common/api-error';
import { PROBLEM_CONTENT_TYPE, toProblem } from '../common/problem.filter';
import { APP_CONFIG, AppConfig } from '../config/app-config';
import type { ToolCallView } from '../tool-calls/tool-calls.dto';
import { ToolCallsService } from '../tool-calls/tool-calls.service';
import { DecisionWaiter } from '../runtime/decision-waiter.service';
import { ToolExecutor } from '../runtime/tool-executor.service';
import { canRunNow } from '../runtime/tool-policy';
import { GovernanceRepository } from '../governance/governance.repository';
import { PendingFacts, protocolErrorOf, protocolErrorOfCall, refusalResult, RUN_ID_META, toCallToolResult, toMcpTool } from './mcp-shapes';

/** The agent and the version one MCP request talks to, resolved before MCP starts. */
export interface McpTarget {
  agent: AgentIdentity;
  row: VersionRow;
}

type Extra = RequestHandlerExtra<ServerRequest, ServerNotification>;

const PROGRESS_EVERY_MS = 1000;

/**
 * Serves a published agent version as an MCP server over Streamable HTTP, statelessly: every HTTP
 * request gets its own SDK server and transport, built from the database, and nothing is kept
 * between requests, so any API node can answer any request.
 *
 * MCP adds no way to run a tool: `tools/call` goes through the one ToolExecutor with entry point
 * `mcp`, and so through every guard, record and audit event of the REST path. What MCP adds is
 * waiting: a call that needs approval is held open for up to MCP_APPROVAL_WAIT_SECONDS, and one
 * made again with the same arguments picks up the first one's decision (the executor's
 * `resumePending`) instead of asking a person twice.
 */
@Injectable()
export class McpService implements OnModuleInit {
  private readonly logger = new Logger(McpService.name);
  /** Aborted when the HTTP server starts to close: waits end at once and answer "still pending". */
  private readonly closing = new AbortController();

  constructor(
    private readonly versions: VersionBuilder,
    private readonly executor: ToolExecutor,
    private readonly waiter: DecisionWaiter,
    private readonly calls: ToolCallsService,
    private readonly adapterHost: HttpAdapterHost,
    private readonly governance: GovernanceRepository,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  onModuleInit(): void {
    // preClose runs before Fastify waits for in-flight requests: a call held open for a decision
    // answers "still pending" (which the client can ask again about) instead of holding up the stop.
    const fastify = this.adapterHost.httpAdapter?.getInstance<FastifyInstance>();
    fastify?.addHook('preClose', (done) => {
      this.closing.abort();
      done();
    });
  }

  /**
   * The agent (of the caller's organization) and the version: 404 not_found (no such agent here,
   * or no such version), 409 not_published. Every MCP route calls this first, so these answers
   * are problem documents, before any MCP.
   */
  resolve(ctx: RequestContext, agentId: string, version: number | undefined): Promise<McpTarget> {
    return this.versions.load(keyOf(ctx).orgId, agentId, version ?? 'latest');
  }

  /**
   * DNS rebinding: a page of any web site can make the user's browser talk to a server it reaches
   * by a name the attacker controls, and the browser then sends that page's `Origin`. A request
   * with an `Origin` is served only when it is configured (MCP_ALLOWED_ORIGINS) or loopback (a
   * page on the user's own machine); requests without one (every non-browser client) are not
   * affected. Refused before anything else with 403 `origin_not_allowed`.
   */
  assertOrigin(req: FastifyRequest): void {
    const origin = req.headers.origin;
    if (origin === undefined) return;
    if (typeof origin === 'string' && (this.config.mcpAllowedOrigins ?? []).includes(origin)) return;
    if (typeof origin === 'string' && isLoopbackOrigin(origin)) return;
    throw new ApiError(
      'origin_not_allowed',
      'Requests from this Origin are not allowed on MCP endpoints (DNS rebinding protection); an operator can allow it in MCP_ALLOWED_ORIGINS.',
    );
  }

  /**
   * What the SDK would answer badly, answered here: a JSON-RPC batch (which would run many tool
   * calls under one rate-limited request, and which the negotiated protocol revisions no longer
   * have) is -32600; `tools/call` params that are not `{ name, arguments? }` are -32602 with a
   * short message (the SDK answered -32603 with its whole validation dump). True when answered.
   */
  private refuseMalformed(reply: FastifyReply, body: unknown): boolean {
    if (Array.isArray(body)) {
      this.sendRpcError(reply, 400, null, ErrorCode.InvalidRequest, 'JSON-RPC batches are not supported: send one message per request.');
      return true;
    }
    if (isRecord(body) && body.method === 'tools/call' && (typeof body.id === 'string' || typeof body.id === 'number')) {
      const parsed = CallToolRequestSchema.safeParse(body);
      if (!parsed.success) {
        const issue = parsed.error.issues[0];
        const where = issue?.path.length ? issue.path.join('.') : 'params';
        this.sendRpcError(reply, 200, body.id, ErrorCode.InvalidParams, `Invalid params: ${where}: ${String(issue?.message ?? 'invalid').slice(0, 200)}`);
        return true;
      }
    }
    return false;
  }

  private sendRpcError(reply: FastifyReply, status: number, id: string | number | null, code: number, message: string): void {
    void reply
      .status(status)
      .type('application/json')
      .send(JSON.stringify({ jsonrpc: '2.0', id, error: { code, message } }));
  }

  /** Answers one POST of JSON-RPC messages: the SDK writes the response (JSON-RPC over SSE) itself. */
  async serve(ctx: RequestContext, target: McpTarget, req: FastifyRequest, reply: FastifyReply, body: unknown): Promise<void> {
    const principal = keyOf(ctx);
    if (this.refuseMalformed(reply, body)) return;
    let building: Promise<BuiltVersion> | undefined;
    const built = () => (building ??= this.versions.buildRow(principal.orgId, principal.orgScopes, target.agent, target.row).then((d) => d.built));
    // The system prompt is only sent in answer to `initialize`; other requests need not compose it.
    const initializing = (Array.isArray(body) ? body : [body]).some((m) => isRecord(m) && m.method === 'initialize');
    const instructions = initializing ? (await built()).systemPrompt : undefined;

    // The low-level Server, not McpServer: our tools are JSON Schema (not zod), their arguments are
    // validated by the executor (not the SDK), and the tool list is known only per request.
    const server = new Server(
      { name: target.agent.name, version: String(target.row.version) },
      { capabilities: { tools: { listChanged: false } }, ...(instructions ? { instructions } : {}) },
    );
    server.setRequestHandler(ListToolsRequestSchema, () => this.guarded(ctx, 'tools/list', () => this.listTools(principal, built)));
    server.setRequestHandler(CallToolRequestSchema, (request, extra) =>
      this.guarded(ctx, 'tools/call', () => this.callTool(ctx, target, request.params, extra)),
    );

    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    await server.connect(transport);
    // From here the SDK owns the response; Fastify's own send (and its onSend hooks) stay out of it.
    reply.hijack();
    const raw = reply.raw;
    raw.setHeader('x-request-id', String(req.id));
    // A client that goes away aborts what its requests are doing (a wait for a decision ends).
    raw.once('close', () => void server.close().catch(() => undefined));
    try {
      // Fastify has read the body already; the transport must never try to read the stream again.
      await transport.handleRequest(req.raw, raw, body ?? null);
    } catch (err) {
      this.logger.error({ err, requestId: ctx.requestId }, 'MCP transport failed');
      if (!raw.headersSent) {
        const { problem } = toProblem(err);
        raw.writeHead(problem.status, { 'content-type': PROBLEM_CONTENT_TYPE });
        raw.end(JSON.stringify(problem));
      } else {
        raw.end();
      }
    }
  }

  /**
   * What the model may call: the version's offered tools, less those that cannot run now (the
   * version retired, a tool disabled, a definition changed since publish, or a scope the
   * organization no longer holds: the tool policy's one rule). A tool that
   * can only ever be refused is worse than none: the model keeps trying it. tools/call checks
   * both again anyway.
   */
  private async listTools(principal: ApiKeyPrincipal, built: () => Promise<BuiltVersion>): Promise<ListToolsResult> {
    const granted = new Set(principal.orgScopes);
    const version = await built();
    const governance = await this.governance.factsForVersion(principal.orgId, version.agentId, version.version);
    const tools = version.tools.filter((t) => canRunNow(t, granted, governance));
    return { tools: tools.map(toMcpTool) };
  }

  private async callTool(ctx: RequestContext, target: McpTarget, params: CallToolRequest['params'], extra: Extra): Promise<CallToolResult> {
    const orgId = keyOf(ctx).orgId;
    const runId = params._meta?.[RUN_ID_META];
    if (runId !== undefined && (typeof runId !== 'string' || runId.length < 1 || runId.length > 255)) {
      throw new McpError(ErrorCode.InvalidParams, `_meta["${RUN_ID_META}"] must be a string of 1 to 255 characters`);
    }
    let call: ToolCallView;
    let waits: boolean;
    try {
      const outcome = await this.executor.request(ctx, {
        agentId: target.agent.id,
        tool: params.name,
        // Absent arguments are an empty object, so that validation names each missing field.
        arguments: params.arguments ?? {},
        version: target.row.version,
        runId: runId ?? null,
        entryPoint: 'mcp',
        resumePending: true,
      });
      call = outcome.call;
      waits = outcome.status === 202;
    } catch (err) {
      if (!(err instanceof ApiError)) throw err;
      const protocolError = protocolErrorOfCall(err.code);
      if (protocolError !== undefined) throw new McpError(protocolError, err.detail);
      return refusalResult(err);
    }
    if (waits) call = await this.awaitDecision(orgId, call, extra);
    return toCallToolResult(call, call.status === 'pending_approval' ? await this.pendingFacts(orgId, call) : {});
  }

  /**
   * Holds the request open until a person decides (and an approved call has run), or
   * MCP_APPROVAL_WAIT_SECONDS pass, sending progress notifications when the client asked for
   * them. The setting is read per call so that it can change without a restart of this object.
   */
  private async awaitDecision(orgId: string, call: ToolCallView, extra: Extra): Promise<ToolCallView> {
    const waitSeconds = this.config.mcpApprovalWaitSeconds;
    const token = extra._meta?.progressToken;
    let last: number | undefined;
    const progress = (waitedMs: number, message: string) => {
      // One at once (it names the approval), then about one a second; each larger than the last, as MCP requires.
      if (token === undefined || (last !== undefined && waitedMs < last + PROGRESS_EVERY_MS)) return;
      last = waitedMs;
      extra
        .sendNotification({ method: 'notifications/progress', params: { progressToken: token, progress: waitedMs / 1000, total: waitSeconds, message } })
        .catch(() => undefined);
    };
    progress(0, waitingMessage(call, waitSeconds));
    if (waitSeconds === 0) return call;
    return this.waiter.waitForDecision(orgId, call.id, {
      timeoutMs: waitSeconds * 1000,
      signal: AbortSignal.any([extra.signal, this.closing.signal]),
      onProgress: (now, waitedMs) => progress(waitedMs, waitingMessage(now, waitSeconds)),
    });
  }

  private async pendingFacts(orgId: string, call: ToolCallView): Promise<PendingFacts> {
    if (!call.approvalId) return {};
    const approval = await this.calls.getApproval(orgId, call.approvalId);
    return { expiresAt: approval.expiresAt };
  }

  /** Our refusals become JSON-RPC errors with their detail; anything unexpected is logged and stays internal. */
  private async guarded<T>(ctx: RequestContext, method: string, run: () => Promise<T>): Promise<T> {
    try {
      return await run();
    } catch (err) {
      if (err instanceof McpError) throw err;
      if (err instanceof ApiError) throw new McpError(protocolErrorOf(err.code), `${err.detail} (${err.code})`);
      this.logger.error({ err, requestId: ctx.requestId, method }, 'MCP request failed');
      throw new McpError(ErrorCode.InternalError, 'Internal error');
    }
  }
}

function waitingMessage(call: ToolCallView, waitSeconds: number): string {
  return call.status === 'running'
    ? 'A person approved the call; the tool is running.'
    : `Waiting up to ${waitSeconds} s for a person to decide on approval ${call.approvalId}.`;
}

function keyOf(ctx: RequestContext): ApiKeyPrincipal {
  if (ctx.principal.type !== 'api_key') throw ApiError.forbidden("Only an organization's API key can use an agent's MCP endpoint.");
  return ctx.principal;
}

function isLoopbackOrigin(origin: string): boolean {
  try {
    const url = new URL(origin);
    return (url.protocol === 'http:' || url.protocol === 'https:') && ['localhost', '127.0.0.1', '[::1]'].includes(url.hostname) && url.origin === origin;
  } catch {
    return false;
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null;
}
