import { DynamicModule, Global, Module } from '@nestjs/common';
import { ThrottlerModule, ThrottlerStorage } from '@nestjs/throttler';
import { RateLimiter } from './rate-limiter.service';

/**
 * `store` plugs in a shared ThrottlerStorage (Redis, Postgres, ...) for several API nodes; the
 * default is @nestjs/throttler's in-memory store, which limits each node on its own.
 */
@Global()
@Module({})
export class RateLimitModule {
  static forRoot(store?: ThrottlerStorage): DynamicModule {
    return {
      module: RateLimitModule,
      imports: [ThrottlerModule.forRoot({ throttlers: [], storage: store })],
      providers: [RateLimiter],
      exports: [RateLimiter],
    };
  }
}
