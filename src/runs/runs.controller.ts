import { Body, Controller, Get, Headers, HttpCode, Inject, OnModuleDestroy, Param, Post, Query, Req, Res } from '@nestjs/common';
import {
  ApiConflictResponse,
  ApiCreatedResponse,
  ApiForbiddenResponse,
  ApiHeader,
  ApiNotFoundResponse,
  ApiOkResponse,
  ApiOperation,
  ApiProduces,
  ApiTags,
} from '@nestjs/swagger';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { ServerResponse } from 'node:http';
import { Access } from '../auth/access.decorator';
import { CredentialWatch } from '../auth/credential-watch.service';
import { Ctx } from '../auth/ctx.decorator';
import { orgIdOf, RequestContext } from '../auth/principal';
import { ApiError } from '../common/api-error';
import { HeldRequests } from '../common/held-requests';
import { OrgHolds } from '../common/org-holds';
import { APP_CONFIG, AppConfig } from '../config/app-config';
import { ProblemResponse } from '../common/openapi';
import { UuidParam } from '../common/uuid-param.pipe';
import { drained, MAX_STREAMS_PER_ORG, OrgStreamSlots } from '../events/event-stream.service';
import { PositionSeal, PositionSeals } from '../secrets/position-seals';
import { CreateRunDto, ListRunsQuery, RunPage, RunView } from './runs.dto';
import { RunEventRow } from './runs.repository';
import { DEFAULT_RUN_WAITS_PER_ORG, holdOpenFor, waitOf } from './run-wait';
import { RunsService } from './runs.service';

/** A run as the database wrote its JSON (RunsRepository.viewText): sent as it is, neither parsed nor written again here (an error keeps the problem filter's type). */
const JSON_TEXT = 'application/json; charset=utf-8';

/** An organization's run streams on a node whose client has not taken what was written, at once. */
export const STALLED_STREAMS_PER_ORG = 4;

const RUN_NOT_FOUND = ProblemResponse('No such run in your organization (`not_found`).');
/** Why a signed-in person reads runs but neither starts nor cancels one: src/auth/oidc/README.md. */
const API_KEYS_ONLY =
  'API keys only: a token of the identity provider is `403 forbidden` here whatever its roles, because a run is re-authorized through the key that started it on every step (reading runs follows roles, for a person too).';
const FORBIDDEN = ProblemResponse('`forbidden`: a role that may not, or a token of the identity provider (API keys only).');

@ApiTags('runs')
@Controller('api/v1')
export class RunsController implements OnModuleDestroy {
  /** Run event streams per organization, as many as `GET /events` allows. */
  private readonly slots: OrgStreamSlots;
  /** The open run event streams of this node, ended when it stops. */
  private readonly open = new Set<AbortController>();
  /** Per organization, its streams waiting for their client to take a batch (STALLED_STREAMS_PER_ORG at most). */
  private readonly stalled = new OrgHolds(() => STALLED_STREAMS_PER_ORG);
  /** Per organization, its `Prefer: wait` answers held now (RUN_WAITS_PER_ORG at most). */
  private readonly waits: OrgHolds;

  constructor(
    private readonly runs: RunsService,
    private readonly credentials: CredentialWatch,
    private readonly seals: PositionSeals,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    held: HeldRequests,
  ) {
    this.slots = new OrgStreamSlots(MAX_STREAMS_PER_ORG, 'run event streams', held);
    this.waits = new OrgHolds(() => this.config.runs.waitsPerOrg ?? DEFAULT_RUN_WAITS_PER_ORG, held);
  }

  @Post('agents/:agentId/runs')
  @Access('agent', 'builder')
  @ApiOperation({
    summary: 'Run the agent: the model loop, every tool call through the executor',
    description: [
      "The version's system prompt and offered tools (for `profile` / `workerType`: the capabilities that apply), the model of `AgentSpec.model`.",
      'A tool call that needs approval pauses the run (`waiting_for_approval`); it resumes by itself once decided, on any node.',
      '`Prefer: wait=N` (N ≤ 60) answers when the run finishes or waits, or after N seconds; `Preference-Applied` says so (past `RUN_WAITS_PER_ORG` of the organization waited for on a server, the run is answered at once without it).',
      API_KEYS_ONLY,
    ].join('\n'),
  })
  @ApiHeader({ name: 'Prefer', required: false, description: '`wait=N`, N seconds (at most 60).' })
  @ApiCreatedResponse({ type: RunView })
  @ApiNotFoundResponse(ProblemResponse('No such agent or version (`not_found`).'))
  @ApiConflictResponse(
    ProblemResponse('`not_published`; the version was retired (`version_retired`, checked first); or it names no model provider (`model_not_configured`).'),
  )
  @ApiForbiddenResponse(FORBIDDEN)
  async create(
    @Ctx() ctx: RequestContext,
    @Param('agentId', UuidParam) agentId: string,
    @Body() dto: CreateRunDto,
    @Headers('prefer') prefer: string | undefined,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<string> {
    const wait = waitOf(prefer);
    // Each wait keeps one of HTTP_MAX_CONNECTIONS: past the organization's share, answered at once, not applied (RFC 7240 lets a server).
    const release = wait === undefined ? undefined : this.waits.tryHold(orgIdOf(ctx));
    if (release) {
      void reply.header('Preference-Applied', `wait=${wait}`);
      holdOpenFor(reply, wait! * 1000);
    }
    void reply.status(201).type(JSON_TEXT);
    try {
      return await this.runs.create(ctx, agentId, dto, release ? wait : 0);
    } finally {
      release?.();
    }
  }

  @Get('runs')
  @Access('viewer', 'agent')
  @ApiOperation({ summary: "List the organization's runs, newest first" })
  @ApiOkResponse({ type: RunPage })
  list(@Ctx() ctx: RequestContext, @Query() query: ListRunsQuery, @Res({ passthrough: true }) reply: FastifyReply): Promise<string> {
    void reply.type(JSON_TEXT);
    return this.runs.list(ctx, query);
  }

  @Get('runs/:id')
  @Access('viewer', 'agent')
  @ApiOperation({ summary: 'Read a run: status, conversation, output, usage' })
  @ApiOkResponse({ type: RunView })
  @ApiNotFoundResponse(RUN_NOT_FOUND)
  get(@Ctx() ctx: RequestContext, @Param('id', UuidParam) id: string, @Res({ passthrough: true }) reply: FastifyReply): Promise<string> {
    void reply.type(JSON_TEXT);
    return this.runs.get(ctx, id);
  }

  @Post('runs/:id/cancel')
  @HttpCode(200)
  @Access('agent', 'builder')
  @ApiOperation({
    summary: 'Cancel a run',
    description: [
      'A run that has not finished becomes `cancelled` and takes no further step; a finished one is answered as it is. Approvals it was waiting for are rejected with a note naming the run; deciding one later answers `409 approval_already_decided`.',
      API_KEYS_ONLY,
    ].join('\n'),
  })
  @ApiOkResponse({ type: RunView })
  @ApiNotFoundResponse(RUN_NOT_FOUND)
  @ApiForbiddenResponse(FORBIDDEN)
  cancel(@Ctx() ctx: RequestContext, @Param('id', UuidParam) id: string, @Res({ passthrough: true }) reply: FastifyReply): Promise<string> {
    void reply.type(JSON_TEXT);
    return this.runs.cancel(ctx, id);
  }

  @Get('runs/:id/events')
  @Access('viewer', 'agent')
  @ApiOperation({
    summary: "The run's events as Server-Sent Events",
    description: [
      "Every event from the run's start, each with `id:` its position; `Last-Event-ID` resumes after it, with nothing lost.",
      'Types: `run.started`, `model.completed`, `tool_call.requested`, `tool_call.succeeded`, `tool_call.failed`, `approval.requested`, `run.waiting`, `run.resumed`, `run.compacted`, `run.succeeded`, `run.failed`, `run.cancelled`.',
      "The stream ends after the run's last event; a comment every 15 s keeps it open meanwhile. It also ends when the API key it was opened with is revoked, or when the identity provider's token expires.",
      `At most ${MAX_STREAMS_PER_ORG} streams per organization per server node (\`429 rate_limited\` past that).`,
    ].join('\n'),
  })
  @ApiHeader({ name: 'Last-Event-ID', required: false, description: 'The `id` of the last event received.' })
  @ApiProduces('text/event-stream')
  @ApiOkResponse({
    description: 'text/event-stream: `id`, `event` (the type) and `data` (JSON) per event.',
    content: { 'text/event-stream': { schema: { type: 'string' } } },
  })
  @ApiNotFoundResponse(RUN_NOT_FOUND)
  async events(
    @Ctx() ctx: RequestContext,
    @Param('id', UuidParam) id: string,
    @Headers('last-event-id') lastEventId: string | undefined,
    @Req() request: FastifyRequest,
    @Res() reply: FastifyReply,
  ): Promise<void> {
    const orgId = await this.runs.assertVisible(ctx, id);
    const seal = this.seals.run(orgId, id);
    const after = lastEventId === undefined || lastEventId.trim() === '' ? '0' : seqOf(seal, lastEventId.trim());
    // What Fastify would have sent (CORS, Vary), which a hijacked reply must send itself.
    const headers = {
      ...(reply.getHeaders() as Record<string, string>),
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-store, no-transform',
      'x-accel-buffering': 'no',
      'x-request-id': String(request.id),
    };
    const raw = reply.raw;
    // Fastify answers HEAD with this handler, and Node sends a HEAD's headers only when its
    // response ends, which a stream of a run that has not finished does not.
    if (request.method === 'HEAD') {
      reply.hijack();
      raw.writeHead(200, headers);
      raw.end();
      return;
    }
    const release = this.slots.take(orgId);
    reply.hijack();
    const gone = new AbortController();
    const leave = () => gone.abort();
    this.open.add(gone);
    raw.on('close', leave);
    // A run can wait a day for a decision: its stream ends when the reader's key is revoked or its token expires.
    const credential = this.credentials.watch(ctx.principal);
    credential.signal.addEventListener('abort', leave, { once: true });
    if (credential.signal.aborted) gone.abort();
    // A client that hung up during the awaits above emitted 'close' before anyone listened: its
    // stream would read the run twice a second until the run finished.
    if (raw.destroyed) gone.abort();
    try {
      if (gone.signal.aborted) return;
      raw.writeHead(200, headers);
      raw.write(': run events\n\n');
      await this.send(orgId, id, seal, after, raw, gone.signal, credential.keyId);
    } catch {
      // The stream is already open: the client reconnects with Last-Event-ID and loses nothing.
    } finally {
      raw.off('close', leave);
      credential.signal.removeEventListener('abort', leave);
      credential.release();
      this.open.delete(gone);
      release();
      // A client that did not take what was written (cut as slow) is not left holding it in the
      // socket's buffer, up to a megabyte a stream, until it reads or goes: the socket is closed.
      if (raw.writableNeedDrain) raw.destroy();
      else raw.end();
    }
  }

  onModuleDestroy(): void {
    // A stream waiting for its client to drain is not the service's to end; this node is stopping.
    this.open.forEach((s) => s.abort());
  }

  /**
   * The run's events to `raw`, read only as fast as the client takes them: the service's stream
   * is stopped when the socket is full and started again after the last event written once it
   * has drained, so a client that reads nothing holds one batch, not the whole run.
   */
  private async send(
    orgId: string,
    id: string,
    seal: PositionSeal,
    after: string,
    raw: ServerResponse,
    gone: AbortSignal,
    keyId: string | undefined,
  ): Promise<void> {
    let last = after;
    while (!gone.aborted) {
      const stretch = new AbortController();
      const stop = () => stretch.abort();
      gone.addEventListener('abort', stop);
      let full = false;
      try {
        await this.runs.stream(
          orgId,
          id,
          last,
          (batch: RunEventRow[]) => {
            // The service may hand over one more batch it had read when it was stopped.
            if (stretch.signal.aborted) return;
            raw.cork();
            for (const e of batch) full = !raw.write(formatEvent(e, seal));
            raw.uncork();
            last = batch[batch.length - 1].seq;
            if (full) stretch.abort();
          },
          () => {
            if (!raw.writableNeedDrain) raw.write(': keep-alive\n\n');
          },
          stretch.signal,
          keyId,
        );
      } finally {
        gone.removeEventListener('abort', stop);
      }
      // The run finished and all of it was written, or the client left.
      if (!full) return;
      // Its client has not taken the batch (megabytes): past its organization's few such streams it is
      // closed, and resumes with Last-Event-ID (60 reading nothing took a node to 1.9 GB, attack round 9).
      const release = this.stalled.tryHold(orgId);
      if (!release) return;
      let taken: boolean;
      try {
        taken = await drained(raw, gone);
      } finally {
        release();
      }
      if (!taken) return;
    }
  }
}

/**
 * The run events' sequence `id` seals (an event's `id:`), or 400. The sequence is shared by every
 * run of every organization, so it is sent sealed under the run's own key
 * (src/secrets/position-seals.ts): in the clear, the gap between two ids counted what every other
 * run wrote in between, and an id of one run now opens in no other.
 */
function seqOf(seal: PositionSeal, id: string): string {
  const pair = seal.open(id);
  if (!pair || pair[1] !== 0n || pair[0] > MAX_SEQ) {
    throw ApiError.invalidRequest([{ path: 'Last-Event-ID', code: 'invalid_header', message: 'Last-Event-ID must be the id of an event of this stream' }]);
  }
  return pair[0].toString();
}

const MAX_SEQ = 9223372036854775807n;

/**
 * The frames of events read once for several streams of a run (RunsService shares their reads):
 * a `model.completed` event holds up to 2,000,000 characters, serialized once, not once a stream.
 * Every stream of the run seals with the same key, so the frame is the same for each. Bytes: a
 * socket that cannot take a string at once keeps a copy of it, a Buffer it only references.
 */
const frames = new WeakMap<RunEventRow, Buffer>();

function formatEvent(e: RunEventRow, seal: PositionSeal): Buffer {
  let frame = frames.get(e);
  if (frame === undefined) frames.set(e, (frame = Buffer.from(frameOf(e, seal))));
  return frame;
}

function frameOf(e: RunEventRow, seal: PositionSeal): string {
  return `id: ${seal.seal(BigInt(e.seq), 0n)}\nevent: ${e.type}\ndata: ${JSON.stringify({ type: e.type, at: new Date(e.at).toISOString(), ...e.data })}\n\n`;
}
