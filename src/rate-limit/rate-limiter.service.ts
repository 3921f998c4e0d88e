import { Inject, Injectable } from '@nestjs/common';
import { ThrottlerStorage } from '@nestjs/throttler';
import { APP_CONFIG, AppConfig } from '../config/app-config';
import { ApiError } from '../common/api-error';
import type { Principal } from '../auth/principal';
import { Metrics } from '../telemetry/metrics';
import { addressGroupOf } from '../common/client-address';

/**
 * Where a client stands against the limit closest to refusing it, for the `RateLimit-Limit`,
 * `RateLimit-Remaining` and `RateLimit-Reset` answer headers (IETF httpapi-ratelimit-headers,
 * draft 07: Reset is in seconds from now).
 */
export interface RateLimitStatus {
  limit: number;
  remaining: number;
  resetSeconds: number;
}

/**
 * Fixed-window limits per API key, per organization and per client address for failed
 * authentications. It runs inside the auth guard: a limiter placed after authentication (an
 * interceptor, or a guard registered after ours) never sees the requests that fail it, which are
 * exactly the ones a credential-stuffing client sends.
 *
 * Counting goes through @nestjs/throttler's `ThrottlerStorage`, so several API nodes share limits
 * by providing a shared store (see docs/security.md); the default store (FixedWindowThrottlerStorage)
 * is per process and costs O(1) per request.
 */
@Injectable()
export class RateLimiter {
  constructor(
    @Inject(ThrottlerStorage) private readonly storage: ThrottlerStorage,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly metrics: Metrics,
  ) {}

  private get windowMs(): number {
    return this.config.rateLimit.windowSeconds * 1000;
  }

  /**
   * After a failed authentication. Past the limit the failure is answered 429 instead of 401, so a
   * client guessing tokens learns nothing more for the rest of the window. A valid key from the
   * same address is still served: many clients share one address behind a NAT, and one of them
   * failing must not lock the others out. An IPv6 client is counted by its /64 (addressGroupOf).
   */
  async recordAuthFailure(address: string): Promise<void> {
    const limit = this.config.rateLimit.authFailures;
    if (limit === 0) return;
    const r = await this.storage.increment(`auth-fail:${addressGroupOf(address)}`, this.windowMs, limit, this.windowMs, 'auth-failures');
    if (r.isBlocked) {
      this.metrics.rateLimited('auth_failures');
      throw tooMany(r.timeToBlockExpire * 1000, 'Too many failed authentications from this address.');
    }
  }

  /**
   * Counts one request of an authenticated principal; answers where it stands against the
   * tighter of its limits (none when every limit is off), or throws 429 past one. A request the
   * guard refuses (`shared` false) counts against the principal's own limit only: the per-key one,
   * or the organization's figure when that is off, so it is limited still.
   */
  async hit(principal: Principal, shared = true): Promise<RateLimitStatus | undefined> {
    const { perOrg } = this.config.rateLimit;
    const perKey = shared || this.config.rateLimit.perKey > 0 || principal.type === 'platform' ? this.config.rateLimit.perKey : perOrg;
    let status: RateLimitStatus | undefined;
    if (perKey > 0) {
      const r = await this.storage.increment(`key:${principal.id}`, this.windowMs, perKey, 0, 'per-key');
      if (r.totalHits > perKey) {
        this.metrics.rateLimited('per_key');
        const who = principal.type === 'oidc' ? 'This signed-in person' : 'This API key';
        throw tooMany(r.timeToExpire * 1000, `${who} made too many requests.`, perKey);
      }
      status = { limit: perKey, remaining: perKey - r.totalHits, resetSeconds: r.timeToExpire };
    }
    if (shared && perOrg > 0 && principal.type !== 'platform') {
      const r = await this.storage.increment(`org:${principal.orgId}`, this.windowMs, perOrg, 0, 'per-org');
      if (r.totalHits > perOrg) {
        this.metrics.rateLimited('per_org');
        throw tooMany(r.timeToExpire * 1000, 'This organization made too many requests.', perOrg);
      }
      const remaining = perOrg - r.totalHits;
      if (!status || remaining < status.remaining) status = { limit: perOrg, remaining, resetSeconds: r.timeToExpire };
    }
    return status;
  }
}

/** The answer headers for a status (see RateLimitStatus). */
export function rateLimitHeaders(s: RateLimitStatus): Record<string, string> {
  return {
    'RateLimit-Limit': String(s.limit),
    'RateLimit-Remaining': String(Math.max(0, s.remaining)),
    'RateLimit-Reset': String(Math.max(0, s.resetSeconds)),
  };
}

function tooMany(ms: number, detail: string, limit?: number): ApiError {
  const seconds = Math.max(1, Math.ceil(ms / 1000));
  return new ApiError('rate_limited', `${detail} Retry after ${seconds} s.`, undefined, undefined, {
    'Retry-After': String(seconds),
    ...(limit !== undefined ? rateLimitHeaders({ limit, remaining: 0, resetSeconds: seconds }) : {}),
  });
}
