import { applyDecorators, SetMetadata } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { RouteConfig } from '@nestjs/platform-fastify';
import { ApiBearerAuth, ApiForbiddenResponse, ApiUnauthorizedResponse } from '@nestjs/swagger';
import { ProblemResponse } from '../common/openapi';
import type { AgentRead } from './auth.service';
import { Role } from './principal';

/**
 * Who may call a route: `platform`, any role of an organization key, `authenticated` (the platform
 * token, or a principal of an organization holding at least one role), or `any-token` (any valid
 * token, a person's whose token carries no role the product knows included). `any-token` is for
 * `GET /me` alone, where such a person finds out what the token carries (API.md, Identity providers).
 */
export type Allowed = Role | 'platform' | 'authenticated' | 'any-token';

export const AccessMetadata = Reflector.createDecorator<Allowed[]>();
export const PUBLIC_ROUTE = 'route:public';
/** In a route's Fastify config: who `@Access` lets call it. */
export const ACCESS_ROUTE_CONFIG = 'access';

/**
 * Declares who may call a route, and says so in the OpenAPI document. Every route carries either
 * this or `@PublicRoute()`: a test walks the router and fails on a route with neither. On methods
 * only: Nest hands a method's route config to Fastify, not a class's, and the webhooks' routes,
 * declared on their class, read and parsed a body before a key they refuse was told 403.
 */
export function Access(...allowed: Allowed[]): MethodDecorator {
  if (allowed.length === 0) throw new Error('@Access() needs at least one principal kind');
  return applyDecorators(
    AccessMetadata(allowed),
    // Also in the route's Fastify config, so a principal the route refuses is refused before its body is read (anonymous-requests.ts).
    RouteConfig({ [ACCESS_ROUTE_CONFIG]: allowed }),
    ApiBearerAuth(),
    ApiUnauthorizedResponse(ProblemResponse('Missing, unknown or revoked token (`unauthorized`).')),
    ApiForbiddenResponse(ProblemResponse("The token's roles do not allow this action (`forbidden`).")),
  );
}

/** In a public route's Fastify config, for the check that runs before the body is read (anonymous-requests.ts). */
export const PUBLIC_ROUTE_CONFIG = 'publicRoute';

/**
 * The only way to open a route to anonymous callers; grep for it to audit what is public. On
 * methods only: Nest hands a method's route config to Fastify, not a class's, and a class-level
 * one would leave its routes refused before the guard.
 */
export function PublicRoute(): MethodDecorator {
  return applyDecorators(SetMetadata(PUBLIC_ROUTE, true), RouteConfig({ [PUBLIC_ROUTE_CONFIG]: true }));
}

/**
 * The route names an agent in the path parameter `param`, and a call's `version` in its body:
 * the guard reads that agent (its `latest` pointer, the switches of the version) in the same
 * query as the key (AuthService, AgentSnapshot). One round trip instead of three on a tool call.
 */
export const ReadsAgentWithKey = Reflector.createDecorator<string>();

/** What the guard asks AuthService to read with the key; the body is not validated yet, so only a positive integer counts as a version. */
export function agentReadOf(request: { params?: unknown; body?: unknown }, param: string): AgentRead | undefined {
  const agentId = (request.params as Record<string, unknown> | undefined)?.[param];
  if (typeof agentId !== 'string') return undefined;
  const version = (request.body as { version?: unknown } | null | undefined)?.version;
  return { agentId, version: typeof version === 'number' && Number.isInteger(version) && version >= 1 && version <= 2147483647 ? version : 'latest' };
}
