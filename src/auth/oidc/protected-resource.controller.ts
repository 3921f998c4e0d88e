import { Controller, Get, Header, Inject, Param, Req, Res } from '@nestjs/common';
import { ApiNotFoundResponse, ApiOkResponse, ApiOperation, ApiProperty, ApiPropertyOptional, ApiTags } from '@nestjs/swagger';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { PublicRoute } from '../access.decorator';
import { ApiError } from '../../common/api-error';
import { APP_CONFIG, AppConfig } from '../../config/app-config';
import { ProblemResponse } from '../../common/openapi';
import { isUuid } from '../../common/uuid-param.pipe';
import { OidcAuthenticator } from './oidc-authenticator.service';
import { PROTECTED_RESOURCE_PREFIX, resourceUrlsOf } from './resource-challenge.service';
import { MCP_SCOPES_SUPPORTED } from './token-scopes';

/** RFC 9728 §2: what a client needs to sign in before it calls the resource. */
export class ProtectedResourceMetadataView {
  @ApiProperty({ description: "The agent's MCP endpoint, as an absolute URL." }) resource: string;
  @ApiProperty({ type: [String], description: 'The identity provider (`OIDC_ISSUER`).' }) authorization_servers: string[];
  @ApiProperty({ type: [String], example: ['mcp:tools'], description: 'The scopes a token may carry for this endpoint (docs/security.md).' })
  scopes_supported: string[];
  @ApiProperty({ type: [String], example: ['header'], description: 'Only `Authorization: Bearer`.' }) bearer_methods_supported: string[];
  @ApiPropertyOptional({ description: 'A name to show people.' }) resource_name?: string;
}

/**
 * The protected-resource metadata of every agent's MCP endpoint, so an MCP client that met a 401
 * can find the identity provider. Public by nature, and it reads nothing: it answers the same for
 * every agent id (whether that agent exists, and in which organization, stays unsaid).
 */
@ApiTags('mcp')
@Controller(PROTECTED_RESOURCE_PREFIX.slice(1))
export class ProtectedResourceController {
  /** With TRUST_PROXY the scheme and host come from the proxy's headers, which a cache must key on too. */
  private readonly varies: string;

  constructor(
    private readonly oidc: OidcAuthenticator,
    @Inject(APP_CONFIG) config: AppConfig,
  ) {
    this.varies = config.trustProxy ? 'Host, X-Forwarded-Host, X-Forwarded-Proto' : 'Host';
  }

  @Get('api/v1/agents/:agentId/mcp')
  @PublicRoute()
  @Header('Cache-Control', 'public, max-age=300')
  @ApiOperation({
    summary: "The OAuth protected-resource metadata (RFC 9728) of an agent's MCP endpoint",
    description:
      "Names the identity provider (`OIDC_ISSUER`) whose access tokens the endpoint accepts. `404` when no identity provider is configured: the endpoint then takes the organization's API keys only.",
  })
  @ApiOkResponse({ type: ProtectedResourceMetadataView })
  @ApiNotFoundResponse(ProblemResponse('No identity provider is configured, or the agent id is not a UUID (`not_found`).'))
  metadata(@Param('agentId') agentId: string, @Req() request: FastifyRequest, @Res({ passthrough: true }) reply: FastifyReply): ProtectedResourceMetadataView {
    // `resource` is built from the request's Host: a shared cache keyed on the path alone served one
    // host's document to another's clients, which refuse it (not the URL they called) and cannot
    // sign in. Added to what CORS put there (`Origin`), not in its place.
    const vary = reply.getHeader('vary');
    void reply.header('Vary', vary ? `${String(vary)}, ${this.varies}` : this.varies);
    const issuer = this.oidc.issuer;
    const urls = issuer && isUuid(agentId) ? resourceUrlsOf(request, agentId) : undefined;
    if (!issuer || !urls) throw ApiError.notFound('protected-resource metadata');
    return {
      resource: urls.resource,
      authorization_servers: [issuer],
      scopes_supported: [...MCP_SCOPES_SUPPORTED],
      bearer_methods_supported: ['header'],
      resource_name: "An agent's MCP endpoint",
    };
  }
}
