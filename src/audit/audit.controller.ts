import { Controller, Get, Query } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiPropertyOptional, ApiTags } from '@nestjs/swagger';
import { IsDateString, IsIn, IsOptional } from 'class-validator';
import { Access } from '../auth/access.decorator';
import { Ctx } from '../auth/ctx.decorator';
import { orgIdOf, RequestContext } from '../auth/principal';
import { PageQuery } from '../common/pagination';
import { AUDIT_EVENT_TYPES, AuditEventType, AuditService } from './audit.service';

export class AuditQuery extends PageQuery {
  @ApiPropertyOptional({ enum: AUDIT_EVENT_TYPES })
  @IsOptional() @IsIn(AUDIT_EVENT_TYPES)
  type?: AuditEventType;

  @ApiPropertyOptional({ format: 'date-time', description: 'Only events at or after this instant.' })
  @IsOptional() @IsDateString({ strict: true })
  since?: string;
}

@ApiTags('audit')
@Controller('api/v1/audit-events')
export class AuditController {
  constructor(private readonly audit: AuditService) {}

  @Get()
  @Access('admin')
  @ApiOperation({ summary: 'The organization\'s audit log, newest first' })
  @ApiOkResponse({ description: '`{ items: AuditEvent[], nextCursor }`' })
  list(@Ctx() ctx: RequestContext, @Query() query: AuditQuery) {
    return this.audit.list(orgIdOf(ctx), query);
  }
}
