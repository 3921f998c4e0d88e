import { createParamDecorator, ExecutionContext } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import { Principal, RequestContext } from './principal';

export type AuthenticatedRequest = FastifyRequest & { principal?: Principal };

/** The request context (principal and request id), set by the global auth guard. */
export const Ctx = createParamDecorator((_data: unknown, host: ExecutionContext): RequestContext => {
  const request = host.switchToHttp().getRequest<AuthenticatedRequest>();
  if (!request.principal) throw new Error('@Ctx() on a route that the auth guard did not authenticate');
  return { principal: request.principal, requestId: String(request.id) };
});
