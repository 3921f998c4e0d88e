import { applyDecorators, SetMetadata } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { ApiBearerAuth, ApiForbiddenResponse, ApiUnauthorizedResponse } from '@nestjs/swagger';
import { ProblemResponse } from '../common/openapi';
import { Role } from './principal';

/** Who may call a route: `platform`, any role of an organization key, or `authenticated` (anyone with a valid token). */
export type Allowed = Role | 'platform' | 'authenticated';

export const AccessMetadata = Reflector.createDecorator<Allowed[]>();
export const PUBLIC_ROUTE = 'route:public';

/**
 * Declares who may call a route, and says so in the OpenAPI document. Every route carries either
 * this or `@PublicRoute()`: a test walks the router and fails on a route with neither.
 */
export function Access(...allowed: Allowed[]): MethodDecorator & ClassDecorator {
  if (allowed.length === 0) throw new Error('@Access() needs at least one principal kind');
  return applyDecorators(
    AccessMetadata(allowed),
    ApiBearerAuth(),
    ApiUnauthorizedResponse(ProblemResponse('Missing, unknown or revoked token (`unauthorized`).')),
    ApiForbiddenResponse(ProblemResponse("The token's roles do not allow this action (`forbidden`).")),
  );
}

/** The only way to open a route to anonymous callers; grep for it to audit what is public. */
export function PublicRoute(): MethodDecorator & ClassDecorator {
  return applyDecorators(SetMetadata(PUBLIC_ROUTE, true));
}
