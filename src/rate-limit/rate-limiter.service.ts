import { Inject, Injectable } from '@nestjs/common';
import { ThrottlerStorage } from '@nestjs/throttler';
import { APP_CONFIG, AppConfig } from '../config/app-config';
import { ApiError } from '../common/api-error';
import type { Principal } from '../auth/principal';

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
  ) {}

  private get windowMs(): number {
    return this.config.rateLimit.windowSeconds * 1000;
  }

  /**
   * After a failed authentication. Past the limit the failure is answered 429 instead of 401, so a
   * client guessing tokens learns nothing more for the rest of the window. A valid key from the
   * same address is still served: many clients share one address behind a NAT, and one of them
   * failing must not lock the others out.
   */
  async recordAuthFailure(address: string): Promise<void> {
    const limit = this.config.rateLimit.authFailures;
    if (limit === 0) return;
    const r = await this.storage.increment(`auth-fail:${address}`, this.windowMs, limit, this.windowMs, 'auth-failures');
    if (r.isBlocked) throw tooMany(r.timeToBlockExpire * 1000, 'Too many failed authentications from this address.');
  }

  async hit(principal: Principal): Promise<void> {
    const { perKey, perOrg } = this.config.rateLimit;
    if (perKey > 0) {
      const r = await this.storage.increment(`key:${principal.id}`, this.windowMs, perKey, 0, 'per-key');
      if (r.totalHits > perKey) throw tooMany(r.timeToExpire * 1000, 'This API key made too many requests.');
    }
    if (perOrg > 0 && principal.type === 'api_key') {
      const r = await this.storage.increment(`org:${principal.orgId}`, this.windowMs, perOrg, 0, 'per-org');
      if (r.totalHits > perOrg) throw tooMany(r.timeToExpire * 1000, 'This organization made too many requests.');
    }
  }
}

function tooMany(ms: number, detail: string): ApiError {
  const seconds = Math.max(1, Math.ceil(ms / 1000));
  return new ApiError('rate_limited', `${detail} Retry after ${seconds} s.`, undefined, undefined, { 'Retry-After': String(seconds) });
}
