import { Controller, Get } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { Access } from '../auth/access.decorator';
import { Ctx } from '../auth/ctx.decorator';
import { RequestContext } from '../auth/principal';

@ApiTags('organizations')
@Controller('api/v1/me')
export class MeController {
  @Get()
  @Access('authenticated')
  @ApiOperation({ summary: 'Who the token belongs to' })
  @ApiOkResponse({ description: '`{ type: "platform" | "api_key", id, orgId?, roles? }`' })
  me(@Ctx() ctx: RequestContext) {
    const p = ctx.principal;
    return p.type === 'platform' ? { type: p.type, id: p.id } : { type: p.type, id: p.id, orgId: p.orgId, roles: p.roles };
  }
}
