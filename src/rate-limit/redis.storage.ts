import { Logger } from '@nestjs/common';
import type { ThrottlerStorage } from '@nestjs/throttler';
import Redis from 'ioredis';
import type { Metrics } from '../telemetry/metrics';
import { FixedWindowThrottlerStorage } from './fixed-window.storage';

type ThrottlerStorageRecord = Awaited<ReturnType<ThrottlerStorage['increment']>>;

/**
 * The fixed window of FixedWindowThrottlerStorage, counted in Redis so that every node shares it.
 * One script per hit, so the read, the increment, the expiry and the block are one atomic step
 * (two nodes hitting the last unit of a window cannot both get it).
 *
 * KEYS[1] the window's counter, KEYS[2] the block marker; ARGV window ms, limit, block ms.
 * Answers { totalHits, ms until the window ends, blocked (0/1), ms until the block ends }.
 */
const HIT_SCRIPT = `
local window = tonumber(ARGV[1])
local limit = tonumber(ARGV[2])
local block = tonumber(ARGV[3])
if block > 0 then
  local blocked = redis.call('PTTL', KEYS[2])
  if blocked > 0 then return {limit + 1, blocked, 1, blocked} end
  local hits = redis.call('INCR', KEYS[1])
  local left = redis.call('PTTL', KEYS[1])
  if left < 0 then redis.call('PEXPIRE', KEYS[1], window); left = window end
  if hits > limit then
    redis.call('SET', KEYS[2], '1', 'PX', block)
    redis.call('DEL', KEYS[1])
    return {hits, block, 1, block}
  end
  return {hits, left, 0, 0}
end
local hits = tonumber(redis.call('GET', KEYS[1]) or '0')
local left = redis.call('PTTL', KEYS[1])
if hits >= limit then
  if left < 0 then left = window end
  return {hits + 1, left, 1, left}
end
hits = redis.call('INCR', KEYS[1])
if left < 0 then redis.call('PEXPIRE', KEYS[1], window); left = window end
return {hits, left, 0, 0}
`;

/** A hit waits at most this long for Redis before it is counted in process instead. */
const COMMAND_TIMEOUT_MS = 250;
const RETRY_AFTER_FAILURE_MS = 1000;

type RedisWithHit = Redis & {
  rateLimitHit(counter: string, block: string, window: number, limit: number, blockMs: number): Promise<[number, number, number, number]>;
};

/**
 * Shared rate-limit counters in Redis. An outage of the limiter is not an outage of the API: while
 * Redis does not answer, hits are counted in this process (each node then limits on its own, as
 * without Redis), `rate_limit_store_up` is 0, `rate_limit_store_fallbacks_total` grows, and one log
 * line says so when it starts and one when Redis is back.
 */
export class RedisThrottlerStorage implements ThrottlerStorage {
  private readonly logger = new Logger('RateLimit');
  private readonly redis: RedisWithHit;
  private readonly local = new FixedWindowThrottlerStorage();
  /** Connected, as ioredis reports it. */
  private up = false;
  /** After a hit failed on a live connection (a timeout), Redis is not asked again before this (epoch ms). */
  private retryAt = 0;
  /** Whether the outage was already logged (one line per outage, not one per request). */
  private downLogged = false;

  constructor(
    url: string,
    private readonly prefix: string,
    private readonly metrics?: Metrics,
  ) {
    this.redis = new Redis(url, {
      // Fail a hit at once while disconnected, rather than queueing requests behind a reconnect.
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      commandTimeout: COMMAND_TIMEOUT_MS,
      connectTimeout: 2000,
      // Keep trying in the background, at most every 2 s, for as long as the process lives.
      retryStrategy: (times) => Math.min(100 * times, 2000),
      lazyConnect: false,
    }) as RedisWithHit;
    this.redis.defineCommand('rateLimitHit', { numberOfKeys: 2, lua: HIT_SCRIPT });
    this.redis.on('ready', () => this.setUp(true));
    // ioredis reports every failed reconnection as an error; the state change is what is logged.
    this.redis.on('error', (err: Error) => this.setUp(false, err.message));
    this.redis.on('close', () => this.setUp(false, 'connection closed'));
    this.metrics?.rateLimitStoreAvailable(false);
  }

  /** Resolves once Redis answers (for tests and start-up checks); rejects after `timeoutMs`. */
  async ready(timeoutMs = 5000): Promise<void> {
    if (this.up) return;
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.redis.off('ready', onReady);
        reject(new Error(`Redis did not answer within ${timeoutMs} ms`));
      }, timeoutMs);
      const onReady = () => {
        clearTimeout(timer);
        resolve();
      };
      this.redis.once('ready', onReady);
    });
  }

  get connected(): boolean {
    return this.up;
  }

  async increment(key: string, ttl: number, limit: number, blockDuration: number, throttlerName: string): Promise<ThrottlerStorageRecord> {
    if (this.up && Date.now() >= this.retryAt) {
      // The hash tag keeps both keys of one counter in one slot of a Redis Cluster.
      const base = `${this.prefix}{${throttlerName}:${key}}`;
      try {
        const [hits, leftMs, blocked, blockLeftMs] = await this.redis.rateLimitHit(`${base}:n`, `${base}:b`, ttl, limit, blockDuration);
        if (this.downLogged) this.setUp(true);
        return { totalHits: hits, timeToExpire: seconds(leftMs), isBlocked: blocked === 1, timeToBlockExpire: seconds(blockLeftMs) };
      } catch (err) {
        // A slow or failing Redis on a live connection: count here for a second, then try again.
        this.retryAt = Date.now() + RETRY_AFTER_FAILURE_MS;
        this.report(false, (err as Error).message);
        // A command past its timeout stays in the client's queue until its reply comes, which a
        // stalled Redis never sends: the hits of each second's first 250 ms waited it out and their
        // commands piled up for as long as the stall lasted (AB-F5). The connection is made again,
        // which fails what waits on it; hits are counted here until Redis answers the new one.
        if (/timed out/i.test((err as Error).message) && this.up) {
          this.up = false;
          this.redis.disconnect(true);
        }
      }
    }
    this.metrics?.rateLimitFallback();
    return this.local.increment(key, ttl, limit, blockDuration, throttlerName);
  }

  async close(): Promise<void> {
    this.redis.removeAllListeners();
    this.redis.on('error', () => {});
    this.redis.disconnect();
  }

  private setUp(up: boolean, why?: string): void {
    this.up = up;
    if (up) this.retryAt = 0;
    this.report(up, why);
  }

  private report(up: boolean, why?: string): void {
    if (up) {
      this.logger.log(
        this.downLogged ? 'Redis answers again; rate limits are shared across nodes again' : 'rate limits are counted in Redis, shared across nodes',
      );
      this.downLogged = false;
    } else if (!this.downLogged) {
      // The message of a connection error names host and port, never the URL's password.
      this.logger.warn(`Redis for rate limits does not answer (${why}); counting in this process until it does`);
      this.downLogged = true;
    }
    this.metrics?.rateLimitStoreAvailable(up);
  }
}

function seconds(ms: number): number {
  return Math.max(0, Math.ceil(ms / 1000));
}
