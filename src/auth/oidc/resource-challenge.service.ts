import { Injectable } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import { ApiError } from '../../common/api-error';
import type { Principal } from '../principal';
import { OidcAuthenticator } from './oidc-authenticator.service';
import { MCP_ENDPOINT_ROUTE, missingScope } from './token-scopes';

/** Where RFC 9728 puts a resource's metadata: the well-known prefix before the resource's path. */
export const PROTECTED_RESOURCE_PREFIX = '/.well-known/oauth-protected-resource';

/** An agent's MCP endpoint (the protected resource) and its metadata document, as absolute URLs. */
export interface ResourceUrls {
  resource: string;
  metadata: string;
}

/**
 * The URLs as the client reached this server (scheme and Host of the request): MCP clients check
 * that the metadata's `resource` is the endpoint they called. Undefined for a Host that is not one.
 */
export function resourceUrlsOf(request: FastifyRequest, agentId: string): ResourceUrls | undefined {
  let origin: string;
  try {
    const url = new URL(`${request.protocol}://${request.host}`);
    // A Host that smuggles a path, query or credentials is no origin; the header then goes without the pointer.
    if (url.pathname !== '/' || url.search || url.hash || url.username || url.password) return undefined;
    // A quote (which URL allows in a host) would end the challenge's quoted string early: a name, an address or [IPv6], and a port only.
    if (!/^https?:\/\/[a-z0-9.-]+(?::\d+)?$|^https?:\/\/\[[0-9a-f:.]+\](?::\d+)?$/.test(url.origin)) return undefined;
    origin = url.origin;
  } catch {
    return undefined;
  }
  const path = `/api/v1/agents/${encodeURIComponent(agentId)}/mcp`;
  return { resource: origin + path, metadata: origin + PROTECTED_RESOURCE_PREFIX + path };
}

/**
 * What the global guard adds for the identity provider: the challenges (RFC 6750 §3, RFC 9728 §5.1)
 * that let an MCP client find where to sign in, and the narrowing by the token's scopes.
 */
@Injectable()
export class ResourceChallenge {
  constructor(private readonly oidc: OidcAuthenticator) {}

  /** A 401 of an agent's MCP endpoint names its metadata (when an identity provider is configured). */
  unauthorized(request: FastifyRequest, err: ApiError): ApiError {
    const urls = this.oidc.issuer ? this.mcpUrls(request) : undefined;
    if (!urls) return err;
    const presented = request.headers.authorization !== undefined;
    const challenge = `Bearer ${presented ? 'error="invalid_token", ' : ''}resource_metadata="${urls.metadata}"`;
    return new ApiError(err.code, err.detail, err.errors, err.extensions, { ...err.headers, 'WWW-Authenticate': challenge });
  }

  /** Refuses (403 `insufficient_scope`) what the token's scopes do not allow; roles were checked before. */
  assertScopes(request: FastifyRequest, principal: Principal): void {
    const scope = missingScope(principal, request.routeOptions.url, request.body);
    if (!scope) return;
    const urls = this.mcpUrls(request);
    const challenge = `Bearer error="insufficient_scope", scope="${scope}"${urls ? `, resource_metadata="${urls.metadata}"` : ''}`;
    throw new ApiError(
      'insufficient_scope',
      `The token's scopes do not include ${scope}, which this request needs.`,
      undefined,
      { scope },
      {
        'WWW-Authenticate': challenge,
      },
    );
  }

  private mcpUrls(request: FastifyRequest): ResourceUrls | undefined {
    if (request.routeOptions.url !== MCP_ENDPOINT_ROUTE) return undefined;
    const agentId = (request.params as { agentId?: unknown } | undefined)?.agentId;
    return typeof agentId === 'string' ? resourceUrlsOf(request, agentId) : undefined;
  }
}
