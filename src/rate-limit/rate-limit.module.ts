import { DynamicModule, Global, Inject, Module, OnModuleDestroy } from '@nestjs/common';
import { ThrottlerStorage } from '@nestjs/throttler';
import { APP_CONFIG, AppConfig } from '../config/app-config';
import { Metrics } from '../telemetry/metrics';
import { FixedWindowThrottlerStorage } from './fixed-window.storage';
import { RateLimiter } from './rate-limiter.service';
import { RedisThrottlerStorage } from './redis.storage';

const OWNS_STORE = Symbol('RATE_LIMIT_OWNS_STORE');

/**
 * Where the counters live: a store given explicitly (tests), else Redis when RATE_LIMIT_REDIS_URL
 * is set (every node shares the limits), else an in-memory fixed-window counter per process
 * (FixedWindowThrottlerStorage), which limits each node on its own.
 */
@Global()
@Module({})
export class RateLimitModule implements OnModuleDestroy {
  constructor(
    @Inject(ThrottlerStorage) private readonly storage: ThrottlerStorage,
    @Inject(OWNS_STORE) private readonly ownsStore: boolean,
  ) {}

  static forRoot(store?: ThrottlerStorage): DynamicModule {
    return {
      module: RateLimitModule,
      providers: [
        {
          provide: ThrottlerStorage,
          inject: [APP_CONFIG, Metrics],
          useFactory: (config: AppConfig, metrics: Metrics): ThrottlerStorage => {
            if (store) return store;
            const { redisUrl, redisPrefix } = config.rateLimit;
            return redisUrl ? new RedisThrottlerStorage(redisUrl, redisPrefix, metrics) : new FixedWindowThrottlerStorage();
          },
        },
        // A store handed in (tests share one between apps) is closed by whoever made it.
        { provide: OWNS_STORE, useValue: store === undefined },
        RateLimiter,
      ],
      exports: [RateLimiter, ThrottlerStorage],
    };
  }

  async onModuleDestroy(): Promise<void> {
    if (this.ownsStore && this.storage instanceof RedisThrottlerStorage) await this.storage.close();
  }
}
