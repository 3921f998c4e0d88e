import { Logger, NotFoundException } from '@nestjs/common';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { ApiError } from '../common/api-error';
import { type BodyBudget, ownerOverShare } from '../common/body-budget';
import type { ConnectionCap } from '../common/connections';
import { declaresBody } from '../common/body-encoding';
import { parseTimeSpent } from '../common/parse-time';
import { sendProblem } from '../common/problem.filter';
import { countedBeforeBody } from '../rate-limit/counted-requests';
import { rateLimitHeaders, type RateLimiter } from '../rate-limit/rate-limiter.service';
import { ACCESS_ROUTE_CONFIG, type Allowed, PUBLIC_ROUTE_CONFIG } from './access.decorator';
import { permits } from './auth.guard';
import type { AuthService } from './auth.service';
import type { ResourceChallenge } from './oidc/resource-challenge.service';
import { budgetOwnerOf, holdsRole, mayActFor, type Principal } from './principal';
import { missingScope } from './oidc/token-scopes';
import { bearerTokenOf } from './tokens';

/**
 * Every route under it needs a credential, unless it is a `@PublicRoute()`. Health, metrics (which
 * checks its own token), the discovery documents, the console and the API docs lie outside it.
 */
const API_PREFIX = '/api/v1/';

/**
 * Refuses a request to the API that carries no bearer token at all, in `onRequest`, before any
 * byte of its body is read. The guard (auth.guard.ts) runs only once Fastify has buffered and
 * parsed the body: anonymous clients each made the node hold up to a megabyte that way, for as
 * long as the request timeout allowed (3,000 connections, 3.2 GB). The answer is the guard's
 * own: the 401 problem document with its WWW-Authenticate, counted against the address by the
 * auth-failure limiter (so 429 past it). A request with a body and a token has the token checked
 * here too, before the body: a made-up one is refused as above (the guard checks it again once the
 * body is read, for the agent a tool call names). Under pressure (half the body budget held, or
 * half the connection cap open) a real one's body counts against its organization's share of the
 * node (`503` past it); below it the connection cap may close a body still being read when full.
 */
export function refuseAnonymousRequests(
  fastify: FastifyInstance,
  limiter: RateLimiter,
  challenge: ResourceChallenge,
  auth: AuthService,
  bodies: BodyBudget,
  connections: ConnectionCap,
): void {
  const logger = new Logger('AuthGuard');
  fastify.addHook('onRequest', async (request, reply) => {
    const body = declaresBody(request.headers);
    // A body for no route is not read to be answered 404: bodies sent to unknown paths held the
    // body budget as well as one sent with a made-up token.
    if (body && request.routeOptions.url === undefined) {
      void reply.header('Connection', 'close');
      sendProblem(reply, request, new NotFoundException(), logger);
      return reply;
    }
    if (!needsCredential(request)) return;
    const header = request.headers.authorization;
    if (bearerTokenOf(header) !== undefined) {
      if (!body) return;
      // The token is checked before any byte of the body is read, pressure or not: a made-up token's
      // body was read and parsed (up to a megabyte, JSON.parse holding the event loop) before the
      // guard refused it, and one that failed to parse was answered 400 before the guard ran, so it
      // never counted as a failed authentication: a stranger's four connections of such bodies took
      // another organization's requests from 12 ms to 721 ms, unlimited (attack round 15, R-F2).
      let principal: Principal | undefined;
      try {
        principal = await auth.authenticate(header);
      } catch (err) {
        if (!(err instanceof ApiError) || err.status !== 401) throw err;
      }
      if (principal) {
        // One the guard will refuse whatever the body (no role; a token scoped away from REST) holds
        // none of its organization's share: it is refused before its body, as the guard would, and
        // counted against its own limit as the guard counts such a refusal.
        const owner = budgetOwnerOf(principal);
        let refusal: unknown = refusedWhateverTheBody(request, principal, challenge);
        if (!refusal && bodies.parseTime.over(owner)) refusal = parseTimeSpent();
        let counted = false;
        if (!refusal) {
          // Counted before the body is read, and past a limit refused unread: counted in the guard, a
          // body that failed to parse was answered 400 and never counted (AB-F4, counted-requests.ts).
          counted = true;
          try {
            const limits = await limiter.hit(principal, sharesOrgLimit(request, principal));
            if (limits) void reply.headers(rateLimitHeaders(limits));
            countedBeforeBody(request, limits);
          } catch (err) {
            refusal = err;
          }
        }
        if (!refusal) {
          bodies.parseTime.own(request, owner);
          if (!bodies.underPressure() && !connections.underPressure()) {
            connections.readsBodyUnchecked(reply);
            return;
          }
          if (bodies.claim(request, reply, owner)) return;
          refusal = ownerOverShare();
        }
        // Refused unread, and counted against the principal's own limit as the guard counts a refusal:
        // the guard never sees it, and a key answered 503 at once could otherwise ask without end.
        if (!counted) {
          try {
            const limits = await limiter.hit(principal, false);
            if (limits) void reply.headers(rateLimitHeaders(limits));
          } catch (err) {
            refusal = err;
          }
        }
        void reply.header('Connection', 'close');
        sendProblem(reply, request, refusal, logger);
        return reply;
      }
    }
    let refusal: unknown;
    try {
      await limiter.recordAuthFailure(request.ip);
      refusal = challenge.unauthorized(request, ApiError.unauthorized());
    } catch (err) {
      refusal = err;
    }
    // The body is never read; the connection is not kept for a request behind it.
    if (body) void reply.header('Connection', 'close');
    sendProblem(reply, request, refusal, logger);
    return reply;
  });
}

function refusedWhateverTheBody(request: FastifyRequest, principal: Principal, challenge: ResourceChallenge): ApiError | undefined {
  if (!holdsRole(principal)) return ApiError.forbidden();
  // A key whose roles the route does not allow (a viewer's POST /agents) had its body read and parsed
  // before the guard's 403: a megabyte of distinct keys is 150 to 400 ms of JSON.parse, within its
  // rate limit (attack round 15, R-F3).
  const allowed = (request.routeOptions.config as unknown as Record<string, unknown> | undefined)?.[ACCESS_ROUTE_CONFIG] as Allowed[] | undefined;
  if (allowed !== undefined && !permits(allowed, principal)) return ApiError.forbidden();
  try {
    // The body is not read yet: only a scope that no body could change (`api` for REST) is missing here.
    challenge.assertScopes(request, principal);
  } catch (err) {
    if (err instanceof ApiError) return err;
    throw err;
  }
  // A key pinned to other agents meets this one as a missing one, as in the guard: before its body.
  const agentId = (request.params as Record<string, unknown> | undefined)?.agentId;
  if (typeof agentId === 'string' && !mayActFor(principal, agentId)) return ApiError.notFound('agent');
  return undefined;
}

/**
 * Whether a request the guard may still accept counts against its organization's limit too. A
 * token whose scopes would refuse an MCP method past discovery (`tools/call` without `mcp:tools`)
 * is refused or not by its body, unread yet: counted against itself alone, as the guard counts a
 * refusal, so refused requests never spend the organization's limit (row 26).
 */
function sharesOrgLimit(request: FastifyRequest, principal: Principal): boolean {
  return missingScope(principal, request.routeOptions.url, { method: 'tools/call' }) === undefined;
}

function needsCredential(request: FastifyRequest): boolean {
  const route = request.routeOptions.url;
  if (route === undefined || !route.startsWith(API_PREFIX)) return false;
  // A CORS preflight carries no Authorization by design (answered before this when CORS is on; no route otherwise).
  if (request.method === 'OPTIONS') return false;
  return (request.routeOptions.config as unknown as Record<string, unknown> | undefined)?.[PUBLIC_ROUTE_CONFIG] !== true;
}
