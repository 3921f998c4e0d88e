import { DynamicModule, Global, Module } from '@nestjs/common';
import { ThrottlerModule, ThrottlerStorage } from '@nestjs/throttler';
import { FixedWindowThrottlerStorage } from './fixed-window.storage';
import { RateLimiter } from './rate-limiter.service';

/**
 * `store` plugs in a shared ThrottlerStorage (Redis, Postgres, ...) for several API nodes; the
 * default is an in-memory fixed-window counter (FixedWindowThrottlerStorage), which limits each
 * node on its own.
 */
@Global()
@Module({})
export class RateLimitModule {
  static forRoot(store?: ThrottlerStorage): DynamicModule {
    return {
      module: RateLimitModule,
      imports: [ThrottlerModule.forRoot({ throttlers: [], storage: store ?? new FixedWindowThrottlerStorage() })],
      providers: [RateLimiter],
      exports: [RateLimiter],
    };
  }
}
