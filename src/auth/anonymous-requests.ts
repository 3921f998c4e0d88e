import { Logger, NotFoundException } from '@nestjs/common';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { ApiError } from '../common/api-error';
import { type BodyBudget, ownerOverShare } from '../common/body-budget';
import type { ConnectionCap } from '../common/connections';
import { declaresBody } from '../common/body-encoding';
import { sendProblem } from '../common/problem.filter';
import type { RateLimiter } from '../rate-limit/rate-limiter.service';
import { PUBLIC_ROUTE_CONFIG } from './access.decorator';
import type { AuthService } from './auth.service';
import type { ResourceChallenge } from './oidc/resource-challenge.service';
import { budgetOwnerOf, holdsRole, type Principal } from './principal';
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
 * auth-failure limiter (so 429 past it). A token that is there but unknown is left to the guard,
 * and the bytes its body may take are bounded by body-budget.ts.
 *
 * Under pressure (half the body budget held, or half the connection cap open) the token is
 * checked here too, before the body: a made-up one is refused as above, and a real one's body
 * counts against its organization's share of the node (`503` past it). Below it, nothing is
 * checked twice, and the connection cap may close a body still being read unchecked when full.
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
      if (!bodies.underPressure() && !connections.underPressure()) {
        connections.readsBodyUnchecked(reply);
        return;
      }
      // Under pressure only (the guard checks it again, once the body is read).
      let principal: Principal | undefined;
      try {
        principal = await auth.authenticate(header);
      } catch (err) {
        if (!(err instanceof ApiError) || err.status !== 401) throw err;
      }
      if (principal) {
        // One the guard will refuse whatever the body (no role; a token scoped away from REST) holds
        // none of its organization's share: it is refused before its body, as the guard would.
        const refusal = refusedWhateverTheBody(request, principal, challenge);
        if (!refusal && bodies.claim(request, reply, budgetOwnerOf(principal))) return;
        void reply.header('Connection', 'close');
        sendProblem(reply, request, refusal ?? ownerOverShare(), logger);
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
  try {
    // The body is not read yet: only a scope that no body could change (`api` for REST) is missing here.
    challenge.assertScopes(request, principal);
  } catch (err) {
    if (err instanceof ApiError) return err;
    throw err;
  }
  return undefined;
}

function needsCredential(request: FastifyRequest): boolean {
  const route = request.routeOptions.url;
  if (route === undefined || !route.startsWith(API_PREFIX)) return false;
  // A CORS preflight carries no Authorization by design (answered before this when CORS is on; no route otherwise).
  if (request.method === 'OPTIONS') return false;
  return (request.routeOptions.config as unknown as Record<string, unknown> | undefined)?.[PUBLIC_ROUTE_CONFIG] !== true;
}
