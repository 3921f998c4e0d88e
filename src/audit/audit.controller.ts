import { Controller, Get, Query } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiProperty, ApiPropertyOptional, ApiTags } from '@nestjs/swagger';
import { IsIn, IsOptional, ValidateBy } from 'class-validator';
import { IsInstant, normalizeInstant } from '../common/instant';
import { Access } from '../auth/access.decorator';
import { Ctx } from '../auth/ctx.decorator';
import { orgIdOf, RequestContext } from '../auth/principal';
import { PageQuery } from '../common/pagination';
import { AuditEvent, AUDIT_EVENT_TYPES, AuditEventType, AuditService } from './audit.service';

export class AuditQuery extends PageQuery {
  @ApiPropertyOptional({ enum: AUDIT_EVENT_TYPES })
  @IsOptional()
  @IsIn(AUDIT_EVENT_TYPES)
  type?: AuditEventType;

  @ApiPropertyOptional({
    format: 'date-time',
    description: 'Only events at or after this instant: `YYYY-MM-DD`, or a date and time with an optional offset (UTC without one).',
  })
  @IsOptional()
  @IsInstant()
  since?: string;

  @ApiPropertyOptional({
    format: 'date-time',
    description:
      'Only events before this instant (exclusive, so `since=2026-01-30&until=2026-01-31` is that one day), written as `since` is; ' +
      'not before `since`. With `since`, a bounded read: recovering the events a webhook endpoint left out takes the ones between its `firstDroppedAt` and `lastDroppedAt`.',
  })
  @IsOptional()
  @IsInstant()
  @ValidateBy({
    name: 'isNotBeforeSince',
    validator: {
      // To the millisecond (what Date reads): an `until` equal to `since` there is taken, and answers what lies between.
      validate: (v: unknown, args) => {
        const since = (args?.object as AuditQuery).since;
        const a = typeof since === 'string' ? normalizeInstant(since) : undefined;
        const b = typeof v === 'string' ? normalizeInstant(v) : undefined;
        return a === undefined || b === undefined || Date.parse(b) >= Date.parse(a);
      },
      defaultMessage: () => 'until must not be before since',
    },
  })
  until?: string;
}

export class AuditPartyView {
  @ApiProperty({
    example: 'api_key',
    description:
      "`platform`, `api_key`, `oidc` (a person signed in through the identity provider; `id` is the token's subject) or `system` for an actor; the kind of object for a target (`org`, `api_key`, `agent`, `tool_call`, `approval`).",
  })
  type: string;
  @ApiProperty() id: string;
}

export class AuditEventView implements AuditEvent {
  @ApiProperty({ format: 'uuid' }) id: string;
  @ApiProperty({ format: 'date-time' }) at: string;
  @ApiProperty({ enum: AUDIT_EVENT_TYPES }) type: AuditEventType;
  @ApiProperty({ type: AuditPartyView, description: 'Who acted.' }) actor: { type: string; id: string };
  @ApiProperty({ format: 'uuid', nullable: true, type: String }) orgId: string | null;
  @ApiProperty({ type: AuditPartyView, description: 'What the event is about.' }) target: { type: string; id: string };
  @ApiProperty({ type: 'object', additionalProperties: true, description: 'Facts of the event; their names depend on `type`.' }) data: Record<string, unknown>;
}

export class AuditEventPage {
  @ApiProperty({ type: [AuditEventView] }) items: AuditEventView[];
  @ApiProperty({ nullable: true, type: String, description: 'Pass as `cursor` for the next page; null on the last one.' }) nextCursor: string | null;
}

@ApiTags('audit')
@Controller('api/v1/audit-events')
export class AuditController {
  constructor(private readonly audit: AuditService) {}

  @Get()
  @Access('admin')
  @ApiOperation({
    summary: "The organization's audit log, newest first",
    description:
      'Newest first by the time each event was written, then by the order it was written in. `since` and `until` bound the read in the index, so a narrow window of a long log is as quick as its first page.',
  })
  @ApiOkResponse({ type: AuditEventPage })
  list(@Ctx() ctx: RequestContext, @Query() query: AuditQuery): Promise<AuditEventPage> {
    return this.audit.list(orgIdOf(ctx), query);
  }
}
