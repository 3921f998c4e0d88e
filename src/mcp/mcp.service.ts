import { Inject, Injectable, Logger } from '@nestjs/common';
import {
  createMcpHandler,
  ProtocolError,
  ProtocolErrorCode,
  Server,
  type CallToolRequest,
  type CallToolResult,
  type ListToolsResult,
  type ServerContext,
} from '@modelcontextprotocol/server';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { BuiltVersion } from '../agents/built-version';
import { AgentIdentity, VersionBuilder, VersionRow } from '../agents/version-builder.service';
import { isOrgPrincipal, OrgPrincipal, RequestContext } from '../auth/principal';
import { ApiError } from '../common/api-error';
import { unsentAnswersOf } from '../common/answer-budget';
import { PROBLEM_CONTENT_TYPE, toProblem } from '../common/problem.filter';
import { APP_CONFIG, AppConfig } from '../config/app-config';
import type { ToolCallView } from '../tool-calls/tool-calls.dto';
import { ToolCallsService } from '../tool-calls/tool-calls.service';
import { DecisionWaiter } from '../runtime/decision-waiter.service';
import { ToolExecutor } from '../runtime/tool-executor.service';
import { ToolCallsInFlight } from '../runtime/tool-calls-in-flight';
import { canRunNow } from '../runtime/tool-policy';
import { GovernanceRepository } from '../governance/governance.repository';
import { isLoopbackOrigin, isRecord, refuseMalformed } from './mcp-guards';
import { sendWebResponse, toWebRequest, unreadAnswersRefusal } from './mcp-http';
import { createTaskResult, declaresTasks, TASK_PARAMS, TASKS_EXTENSION, taskOf } from './mcp-tasks';
import { McpHeldCalls } from './mcp-held-calls';
import { factsOf } from './mcp-tool-facts';
import { PendingFacts, protocolErrorOf, protocolErrorOfCall, refusalResult, RUN_ID_META, toCallToolResult, toMcpTool } from './mcp-shapes';

/** The agent and the version one MCP request talks to, resolved before MCP starts. */
export interface McpTarget {
  agent: AgentIdentity;
  row: VersionRow;
}

/**
 * Serves a published agent version as an MCP server over Streamable HTTP, statelessly: every HTTP
 * request gets its own SDK server and transport, built from the database, and nothing is kept
 * between requests, so any API node can answer any request.
 *
 * MCP adds no way to run a tool: `tools/call` goes through the one ToolExecutor with entry point
 * `mcp`, and so through every guard, record and audit event of the REST path. What MCP adds is
 * waiting: a call that needs approval is held open for up to MCP_APPROVAL_WAIT_SECONDS, and one
 * made again with the same arguments picks up the first one's decision (the executor's
 * `resumePending`) instead of asking a person twice; once, see ExclusiveWaitOptions.
 */
@Injectable()
export class McpService {
  private readonly logger = new Logger(McpService.name);

  constructor(
    private readonly versions: VersionBuilder,
    private readonly executor: ToolExecutor,
    private readonly waiter: DecisionWaiter,
    private readonly held: McpHeldCalls,
    private readonly calls: ToolCallsService,
    private readonly governance: GovernanceRepository,
    private readonly inFlight: ToolCallsInFlight,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

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
   * Answers one POST: a 2026-07-28 request (it carries the per-request `_meta` envelope) or a
   * 2025-era one (`initialize`, then requests without it), each by a fresh SDK server built from
   * the database for this request. The SDK's HTTP entry picks the era and writes the answer
   * (JSON-RPC over SSE); nothing is kept once it is written.
   */
  async serve(ctx: RequestContext, target: McpTarget, req: FastifyRequest, reply: FastifyReply, body: unknown): Promise<void> {
    const principal = keyOf(ctx);
    if (refuseMalformed(reply, body)) return;
    let building: Promise<BuiltVersion> | undefined;
    const built = () => (building ??= this.versions.buildRow(principal.orgId, principal.orgScopes, target.agent, target.row).then((d) => d.built));
    // The system prompt is only sent in answer to `initialize` (2025) or `server/discover` (2026-07-28).
    const method = isRecord(body) ? body.method : undefined;
    const instructions = method === 'initialize' || method === 'server/discover' ? (await built()).systemPrompt : undefined;

    // From here the SDK's answer is written to the socket; Fastify's own send (and its onSend hooks) stay out of it.
    reply.hijack();
    const raw = reply.raw;
    // A client that goes away aborts what its request is doing (a wait for a decision ends).
    const gone = new AbortController();
    raw.once('close', () => gone.abort());
    // The arguments as the client sent them: the SDK's schema parse drops a key named `__proto__`,
    // which REST refuses as an unknown property (nothing is looser over MCP). One message per request.
    const sent = method === 'tools/call' && isRecord(body) && isRecord(body.params) ? body.params.arguments : undefined;
    const handler = createMcpHandler(({ era }) => this.server(ctx, target, principal, built, instructions, gone.signal, era, sent), {
      legacy: 'stateless',
      responseMode: 'sse',
      onerror: (err) => this.logger.debug({ err, requestId: ctx.requestId }, 'MCP request refused'),
    });
    try {
      const res = await handler.fetch(toWebRequest(req, gone.signal), { parsedBody: body ?? null });
      // Outside Fastify's onSend, so the node's budget of unsent answers is asked here (attack round 12, I-F2).
      const budget = unsentAnswersOf(req);
      const admit = (size: number) => budget?.admit(req, raw, size) ?? true;
      await sendWebResponse(reply, res, String(req.id), admit, () => unreadAnswersRefusal(reply), method === 'tools/call');
    } catch (err) {
      this.logger.error({ err, requestId: ctx.requestId }, 'MCP transport failed');
      if (!raw.headersSent) {
        const { problem } = toProblem(err);
        // With what Fastify would have sent (CORS, Vary): a browser client reads the refusal too.
        const headers = { ...(reply.getHeaders() as Record<string, string>), 'content-type': PROBLEM_CONTENT_TYPE, 'x-request-id': String(req.id) };
        raw.writeHead(problem.status, headers).end(JSON.stringify(problem));
      } else {
        raw.end();
      }
    } finally {
      await handler.close().catch(() => undefined);
    }
  }

  /**
   * The SDK server for one request. The low-level Server, not McpServer: our tools are JSON Schema
   * (not Standard Schema), their arguments are validated by the executor (not the SDK), and the
   * tool list is known only per request.
   */
  private server(
    ctx: RequestContext,
    target: McpTarget,
    principal: OrgPrincipal,
    built: () => Promise<BuiltVersion>,
    instructions: string | undefined,
    gone: AbortSignal,
    era: 'legacy' | 'modern',
    sentArguments: unknown,
  ): Server {
    // The Tasks extension is a 2026-07-28 one: 2025 clients are told nothing new.
    const extensions = era === 'modern' ? { extensions: { [TASKS_EXTENSION]: {} } } : {};
    const server = new Server(
      { name: target.agent.name, version: String(target.row.version) },
      { capabilities: { tools: { listChanged: false }, ...extensions }, ...(instructions ? { instructions } : {}) },
    );
    if (era === 'modern') {
      server.setRequestHandler('tasks/get', { params: TASK_PARAMS }, (params, extra) =>
        this.guarded(ctx, 'tasks/get', () => this.getTask(principal, target, params.taskId, extra)),
      );
    }
    server.setRequestHandler('tools/list', () => this.guarded(ctx, 'tools/list', () => this.listTools(principal, built)));
    server.setRequestHandler('tools/call', (request, extra) =>
      this.guarded(ctx, 'tools/call', () => this.callTool(ctx, target, request.params, extra, gone, sentArguments)),
    );
    return server;
  }

  /**
   * What the model may call: the version's offered tools, less those that cannot run now (the
   * version retired, a tool disabled, a definition changed since publish, or a scope the
   * organization no longer holds: the tool policy's one rule). A tool that
   * can only ever be refused is worse than none: the model keeps trying it. tools/call checks
   * both again anyway.
   */
  private async listTools(principal: OrgPrincipal, built: () => Promise<BuiltVersion>): Promise<ListToolsResult> {
    const granted = new Set(principal.orgScopes);
    const version = await built();
    const governance = await this.governance.factsForVersion(principal.orgId, version.agentId, version.version, version.tools);
    const tools = version.tools.filter((t) => canRunNow(t, granted, governance));
    return { tools: tools.map((t) => toMcpTool(t, factsOf(t))) };
  }

  private async callTool(
    ctx: RequestContext,
    target: McpTarget,
    params: CallToolRequest['params'],
    extra: ServerContext,
    gone: AbortSignal,
    sentArguments: unknown,
  ): Promise<CallToolResult> {
    const orgId = keyOf(ctx).orgId;
    const runId = params._meta?.[RUN_ID_META];
    if (runId !== undefined && (typeof runId !== 'string' || runId.length < 1 || runId.length > 255)) {
      throw new ProtocolError(ProtocolErrorCode.InvalidParams, `_meta["${RUN_ID_META}"] must be a string of 1 to 255 characters`);
    }
    let call: ToolCallView;
    let waits: boolean;
    try {
      const outcome = await this.inFlight.run(orgId, () =>
        this.executor.request(ctx, {
          agentId: target.agent.id,
          tool: params.name,
          // Absent arguments are an empty object, so that validation names each missing field.
          arguments: sentArguments ?? params.arguments ?? {},
          version: target.row.version,
          runId: runId ?? null,
          entryPoint: 'mcp',
          resumePending: true,
        }),
      );
      call = outcome.call;
      waits = outcome.status === 202;
    } catch (err) {
      if (!(err instanceof ApiError)) throw err;
      const protocolError = protocolErrorOfCall(err.code);
      if (protocolError !== undefined) throw new ProtocolError(protocolError, err.detail);
      return refusalResult(err);
    }
    // A client that declared the Tasks extension gets a task at once instead of a held request.
    if (waits && declaresTasks(extra)) return createTaskResult(call, await this.pendingFacts(orgId, call));
    const decided = waits ? await this.held.hold(ctx.principal, orgId, call, extra, gone) : call;
    return toCallToolResult(decided, decided.status === 'pending_approval' ? await this.pendingFacts(orgId, decided) : {});
  }

  /**
   * `tasks/get`: the task derived from the stored tool call, whichever node asks. Only the key that
   * made the call, through this agent's endpoint, can follow it; anything else is "not found".
   * Reading a settled call hands its outcome over (as a held request's answer does).
   */
  private async getTask(principal: OrgPrincipal, target: McpTarget, taskId: string, extra: ServerContext): Promise<Record<string, unknown>> {
    if (!declaresTasks(extra)) {
      throw new ProtocolError(ProtocolErrorCode.MissingRequiredClientCapability, 'Missing required client capability', {
        requiredCapabilities: { extensions: { [TASKS_EXTENSION]: {} } },
      });
    }
    const notFound = new ProtocolError(ProtocolErrorCode.InvalidParams, 'Failed to retrieve task: Task not found');
    if (!UUID.test(taskId)) throw notFound;
    const stored = await this.calls.get(principal.orgId, taskId).catch(() => undefined);
    if (!stored || stored.agentId !== target.agent.id || stored.requestedBy !== principal.id || stored.entryPoint !== 'mcp') throw notFound;
    const call = await this.waiter.waitForDecision(principal.orgId, taskId, { timeoutMs: 0 });
    return taskOf(call, call.status === 'pending_approval' ? await this.pendingFacts(principal.orgId, call) : {});
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
      if (err instanceof ProtocolError) throw err;
      if (err instanceof ApiError) throw new ProtocolError(protocolErrorOf(err.code), `${err.detail} (${err.code})`);
      this.logger.error({ err, requestId: ctx.requestId, method }, 'MCP request failed');
      throw new ProtocolError(ProtocolErrorCode.InternalError, 'Internal error');
    }
  }
}

function keyOf(ctx: RequestContext): OrgPrincipal {
  if (!isOrgPrincipal(ctx.principal))
    throw ApiError.forbidden(
      "Only an organization's API key, or a person of the organization signed in through its identity provider, can use an agent's MCP endpoint.",
    );
  return ctx.principal;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
