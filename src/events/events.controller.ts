import { Controller, Get, Headers, Query, Req, Res } from '@nestjs/common';
import { ApiHeader, ApiOkResponse, ApiOperation, ApiProduces, ApiTags, ApiTooManyRequestsResponse } from '@nestjs/swagger';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Access } from '../auth/access.decorator';
import { CredentialWatch } from '../auth/credential-watch.service';
import { Ctx } from '../auth/ctx.decorator';
import { orgIdOf, RequestContext } from '../auth/principal';
import { ApiError } from '../common/api-error';
import { ProblemResponse } from '../common/openapi';
import { PositionSeals } from '../secrets/position-seals';
import { StreamStart } from './event-log.repository';
import { EventPosition, FROM_THE_START, parsePosition } from './event-position';
import { EventStreamService, MAX_STREAMS_PER_ORG } from './event-stream.service';
import { APPROVER_EVENT_TYPES, streamTypesFor } from './event-visibility';
import { EventsQuery } from './events.dto';

@ApiTags('events')
@Controller('api/v1/events')
export class EventsController {
  constructor(
    private readonly streams: EventStreamService,
    private readonly credentials: CredentialWatch,
    private readonly seals: PositionSeals,
  ) {}

  @Get()
  @Access('admin', 'approver')
  @ApiOperation({
    summary: "The organization's audit events as they are written (Server-Sent Events)",
    description: [
      'A `text/event-stream`: each event is `id: <position>` and `data: <AuditEvent as JSON>`, in order. The stream opens',
      'with an `id:` line alone (where it starts) and a comment (`: keep-alive`) is sent every 15 s. Reconnect with',
      '`Last-Event-ID: <the last id received>` to get exactly the events written since, none twice. Without it the stream',
      `starts now; \`Last-Event-ID: ${FROM_THE_START}\` replays everything from the start. Positions are opaque, and an id`,
      "of another organization's stream is refused. Browsers: EventSource cannot send `Authorization`; use a fetch-based client.",
      "The stream ends when the API key it was opened with is revoked, or when the identity provider's token expires.",
      `An admin's stream carries every type. An approver's carries only the work it reviews (${APPROVER_EVENT_TYPES.join(', ')}),`,
      'from now and on resuming alike; asking it for another type is `403 forbidden` with an `errors[]` entry at `types[i]`.',
      `At most ${MAX_STREAMS_PER_ORG} streams per organization per server node.`,
    ].join(' '),
  })
  @ApiProduces('text/event-stream')
  @ApiHeader({ name: 'Last-Event-ID', required: false, description: 'The `id:` of the last event received: resume after it.' })
  @ApiOkResponse({
    description: 'The stream.',
    content: {
      'text/event-stream': { schema: { type: 'string', example: 'id: 3mXn0bH2kQe8T1vZy4LcWg9pAuDsRf7o\ndata: {"id":"…","type":"approval.requested",…}\n\n' } },
    },
  })
  @ApiTooManyRequestsResponse(ProblemResponse(`The organization already has ${MAX_STREAMS_PER_ORG} streams open on this node (\`rate_limited\`).`))
  async stream(
    @Ctx() ctx: RequestContext,
    @Query() query: EventsQuery,
    @Headers('last-event-id') lastEventId: string | undefined,
    @Req() request: FastifyRequest,
    @Res() reply: FastifyReply,
  ): Promise<void> {
    const orgId = orgIdOf(ctx);
    const types = streamTypesFor(ctx.principal, query.types);
    const resumeAt = lastEventId ? parsePosition(this.seals.events(orgId), lastEventId.trim()) : undefined;
    if (lastEventId && !resumeAt) throw notIssued();
    const headers = {
      ...(reply.getHeaders() as Record<string, string>),
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-store',
      // Proxies that buffer answers (nginx) would hold events back.
      'x-accel-buffering': 'no',
      'x-request-id': String(request.id),
    };
    // Fastify answers HEAD with this handler, and Node sends a HEAD's headers only when its
    // response ends, which a stream never does: the client waited for the idle timeout.
    if (request.method === 'HEAD') {
      reply.hijack();
      reply.raw.writeHead(200, headers);
      reply.raw.end();
      return;
    }
    const release = this.streams.admit(orgId);
    let from: StreamStart;
    try {
      const head = await this.streams.head();
      if (resumeAt && !issuedBy(resumeAt, head)) throw notIssued();
      from = resumeAt ? { from: resumeAt } : head;
    } catch (err) {
      release();
      throw err;
    }
    // From here the response is ours: Fastify would end it when this handler returns.
    reply.hijack();
    reply.raw.writeHead(200, headers);
    this.streams.open(orgId, this.credentials.watch(ctx.principal), types, from, reply.raw, release);
  }
}

function notIssued(): ApiError {
  return ApiError.invalidRequest([{ path: 'Last-Event-ID', code: 'invalid_header', message: 'Last-Event-ID must be the id of an event this stream sent' }]);
}

/**
 * Whether `p` can be a position a stream sent. Events are sent below the horizon, which is below
 * the snapshot's xmax; an opening id is `(xmin, 0)`, and xmin is xmax when nothing runs. A position
 * past that was never sent: resuming there would wait, silently, for transactions that may never
 * come. Sealed ids cannot be made up, so this holds against a leaked secret, or a bug.
 */
function issuedBy(p: EventPosition, head: StreamStart): boolean {
  const xmax = head.skipBelow ?? head.from.tx;
  return p.tx < xmax || (p.tx === xmax && p.seq === 0n);
}
