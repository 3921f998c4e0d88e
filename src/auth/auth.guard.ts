import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { ApiError } from '../common/api-error';
import { AccessMetadata, agentReadOf, Allowed, PUBLIC_ROUTE, ReadsAgentWithKey } from './access.decorator';
import type { AuthenticatedRequest } from './ctx.decorator';
import { AuthService } from './auth.service';
import { ResourceChallenge } from './oidc/resource-challenge.service';
import { effectiveRoles, holdsRole, mayActFor, Principal } from './principal';
import { countBeforeBody } from '../rate-limit/counted-requests';
import { RateLimiter, rateLimitHeaders } from '../rate-limit/rate-limiter.service';
import type { FastifyReply } from 'fastify';

/**
 * The one guard that authenticates every route. A route that declares nothing is refused, so a
 * forgotten declaration fails closed rather than open.
 */
@Injectable()
export class AuthGuard implements CanActivate {
  constructor(
    private readonly reflector: Reflector,
    private readonly auth: AuthService,
    private readonly limiter: RateLimiter,
    private readonly challenge: ResourceChallenge,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const targets = [context.getHandler(), context.getClass()];
    if (this.reflector.getAllAndOverride<boolean>(PUBLIC_ROUTE, targets)) return true;
    const allowed = this.reflector.getAllAndOverride(AccessMetadata, targets);
    const request = context.switchToHttp().getRequest<AuthenticatedRequest>();
    const agentParam = this.reflector.getAllAndOverride(ReadsAgentWithKey, targets);
    let principal: Principal;
    try {
      principal = await this.auth.authenticate(request.headers.authorization, agentParam ? agentReadOf(request, agentParam) : undefined);
    } catch (err) {
      if (err instanceof ApiError && err.status === 401) {
        await this.limiter.recordAuthFailure(request.ip);
        throw this.challenge.unauthorized(request, err);
      }
      throw err;
    }
    request.principal = principal;
    let refusal: unknown;
    try {
      if (!allowed) throw ApiError.forbidden('This route declares no access and is closed.');
      if (!permits(allowed, principal)) throw ApiError.forbidden();
      this.challenge.assertScopes(request, principal);
      // A key pinned to some agents meets any other as a missing one, as it would another organization's.
      const agentId = (request.params as Record<string, unknown> | undefined)?.agentId;
      if (typeof agentId === 'string' && !mayActFor(principal, agentId)) throw ApiError.notFound('agent');
    } catch (err) {
      refusal = err;
    }
    // A refused request still counts, against its principal's own limit, so a refused client cannot
    // flood; but not against its organization's: six people with no role (or MCP clients' tokens on
    // REST) spent its budget in seconds and its keys and runtimes were all answered 429.
    // A request with a body was counted before its body was read (anonymous-requests.ts): not twice.
    const counted = countBeforeBody(request);
    const limits = counted ? counted.limits : await this.limiter.hit(principal, refusal === undefined && holdsRole(principal));
    if (limits) void context.switchToHttp().getResponse<FastifyReply>().headers(rateLimitHeaders(limits));
    if (refusal !== undefined) throw refusal;
    return true;
  }
}

export function permits(allowed: readonly Allowed[], principal: Principal): boolean {
  if (allowed.includes('any-token')) return true;
  if (principal.type === 'platform') return allowed.includes('platform') || allowed.includes('authenticated');
  // A person whose token carries no role the product knows (they are dropped) may only ask who it
  // is: being signed in to the organization's identity provider grants nothing here by itself.
  if (principal.roles.length === 0) return false;
  if (allowed.includes('authenticated')) return true;
  const roles = effectiveRoles(principal.roles);
  return allowed.some((a) => a !== 'platform' && a !== 'authenticated' && a !== 'any-token' && roles.has(a));
}
