import { Controller, Get } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { Access } from '../auth/access.decorator';
import { Ctx } from '../auth/ctx.decorator';
import { RequestContext } from '../auth/principal';
import { MeView } from './orgs.dto';

@ApiTags('organizations')
@Controller('api/v1/me')
export class MeController {
  @Get()
  @Access('any-token')
  @ApiOperation({ summary: 'Who the token belongs to' })
  @ApiOkResponse({ type: MeView })
  me(@Ctx() ctx: RequestContext): MeView {
    const p = ctx.principal;
    if (p.type === 'platform') return { type: p.type, id: p.id };
    // A signed-in person is named by the token's subject, as in audit events.
    return {
      type: p.type,
      id: p.type === 'oidc' ? p.subject : p.id,
      orgId: p.orgId,
      roles: p.roles,
      ...(p.expiresAt !== undefined ? { expiresAt: new Date(p.expiresAt).toISOString() } : {}),
      ...(p.type === 'api_key' && p.agentIds ? { agentIds: [...p.agentIds] } : {}),
    };
  }
}
