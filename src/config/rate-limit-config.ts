import { Transform } from 'class-transformer';
import { IsInt, IsOptional, IsString, Matches, Max, MaxLength, Min } from 'class-validator';
import { emptyToUndefined, toInt } from './env-transforms';
import { TelemetryVariables } from './telemetry-config';
import { ParsesAsUrl } from './parses-as-url';

/** How many requests a key, an organization and a failing client may make, and where they are counted. */
export class RateLimitVariables extends TelemetryVariables {
  @IsOptional()
  @Transform(toInt)
  @IsInt()
  @Min(1)
  @Max(86400)
  RATE_LIMIT_WINDOW_SECONDS: number = 60;

  /** Requests one API key (or the platform token) may make per window; 0 turns the limit off. */
  @IsOptional()
  @Transform(toInt)
  @IsInt()
  @Min(0)
  @Max(10_000_000)
  RATE_LIMIT_PER_KEY: number = 1200;

  /** Requests all keys of one organization may make together per window; 0 turns it off. */
  @IsOptional()
  @Transform(toInt)
  @IsInt()
  @Min(0)
  @Max(10_000_000)
  RATE_LIMIT_PER_ORG: number = 6000;

  /** Failed authentications one client address may make per window; 0 turns it off. */
  @IsOptional()
  @Transform(toInt)
  @IsInt()
  @Min(0)
  @Max(10_000_000)
  RATE_LIMIT_AUTH_FAILURES: number = 30;

  /** Set: every node counts rate limits in this Redis, so limits hold across nodes. Unset: per process. */
  @IsOptional()
  @Transform(emptyToUndefined)
  @IsString()
  @MaxLength(2048)
  @Matches(/^rediss?:\/\/[^\s]+$/, { message: 'must be a redis:// or rediss:// URL' })
  @ParsesAsUrl()
  RATE_LIMIT_REDIS_URL?: string;

  /** Prefix of every rate-limit key in Redis, so several deployments (or test runs) can share one Redis. */
  @IsOptional()
  @IsString()
  @Matches(/^[A-Za-z0-9:._-]{1,64}$/, { message: 'must be 1 to 64 of A-Z a-z 0-9 : . _ -' })
  RATE_LIMIT_REDIS_PREFIX: string = 'cp:rl:';
}

export interface RateLimitConfig {
  windowSeconds: number;
  /** 0 = off. */
  perKey: number;
  perOrg: number;
  authFailures: number;
  /** Unset: counted per process. */
  redisUrl?: string;
  redisPrefix: string;
}
