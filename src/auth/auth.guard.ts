import { CanActivate, ExecutionContext, Inject, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { FastifyReply } from 'fastify';
import { timingSafeEqual } from 'node:crypto';
import { DataSource } from 'typeorm';
import { APP_CONFIG, AppConfig } from '../config/app-config';
import { ApiError } from '../common/api-error';
import { AccessMetadata, Allowed, PUBLIC_ROUTE } from './access.decorator';
import type { AuthenticatedRequest } from './ctx.decorator';
import { effectiveRoles, Principal, Role } from './principal';
import { RateLimiter, rateLimitHeaders } from '../rate-limit/rate-limiter.service';
import { API_KEY_PREFIX, hashToken } from './tokens';

interface KeyRow {
  id: string;
  org_id: string;
  roles: Role[];
  token_hash: string;
  scopes: string[];
}

/**
 * The one guard that authenticates every route. A route that declares nothing is refused, so a
 * forgotten declaration fails closed rather than open.
 */
@Injectable()
export class AuthGuard implements CanActivate {
  private readonly platformTokenHash: Buffer;

  constructor(
    private readonly reflector: Reflector,
    private readonly dataSource: DataSource,
    private readonly limiter: RateLimiter,
    @Inject(APP_CONFIG) config: AppConfig,
  ) {
    this.platformTokenHash = Buffer.from(hashToken(config.platformAdminToken), 'hex');
  }

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const targets = [context.getHandler(), context.getClass()];
    if (this.reflector.getAllAndOverride<boolean>(PUBLIC_ROUTE, targets)) return true;
    const allowed = this.reflector.getAllAndOverride(AccessMetadata, targets);
    const request = context.switchToHttp().getRequest<AuthenticatedRequest>();
    let principal: Principal;
    try {
      principal = await this.authenticate(request.headers.authorization);
    } catch (err) {
      if (err instanceof ApiError && err.status === 401) await this.limiter.recordAuthFailure(request.ip);
      throw err;
    }
    const limits = await this.limiter.hit(principal);
    if (limits) void context.switchToHttp().getResponse<FastifyReply>().headers(rateLimitHeaders(limits));
    request.principal = principal;
    if (!allowed) throw ApiError.forbidden('This route declares no access and is closed.');
    if (!permits(allowed, principal)) throw ApiError.forbidden();
    return true;
  }

  async authenticate(header: string | undefined): Promise<Principal> {
    const match = /^Bearer\s+(\S+)\s*$/i.exec(header ?? '');
    if (!match) throw ApiError.unauthorized();
    const token = match[1];
    const digest = Buffer.from(hashToken(token), 'hex');
    if (timingSafeEqual(digest, this.platformTokenHash)) return { type: 'platform', id: 'platform' };
    if (!token.startsWith(API_KEY_PREFIX) || token.length > 200) throw ApiError.unauthorized();
    const rows: KeyRow[] = await this.dataSource.query(
      `SELECT k.id, k.org_id, k.roles, k.token_hash, o.scopes
         FROM api_key k JOIN org o ON o.id = k.org_id
        WHERE k.token_hash = $1 AND k.revoked_at IS NULL`,
      [digest.toString('hex')],
    );
    const row = rows[0];
    // The lookup is by digest; comparing the digests again keeps the decision itself constant-time.
    if (!row || !timingSafeEqual(Buffer.from(row.token_hash, 'hex'), digest)) throw ApiError.unauthorized();
    return { type: 'api_key', id: row.id, orgId: row.org_id, roles: row.roles, orgScopes: row.scopes };
  }
}

export function permits(allowed: readonly Allowed[], principal: Principal): boolean {
  if (allowed.includes('authenticated')) return true;
  if (principal.type === 'platform') return allowed.includes('platform');
  const roles = effectiveRoles(principal.roles);
  return allowed.some((a) => a !== 'platform' && a !== 'authenticated' && roles.has(a));
}
