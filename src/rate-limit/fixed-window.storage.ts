import type { ThrottlerStorage } from '@nestjs/throttler';

/** What any ThrottlerStorage answers (the interface is not exported by name). */
type ThrottlerStorageRecord = Awaited<ReturnType<ThrottlerStorage['increment']>>;

interface Window {
  hits: number;
  /** Epoch ms at which the count starts again from zero. */
  resetsAt: number;
  /** Epoch ms until which every hit is refused (only with a block duration). */
  blockedUntil: number;
}

/** How often (ms) windows that ended are dropped, so the map holds only the keys seen lately. */
const SWEEP_EVERY_MS = 60_000;

/**
 * The default, per-process rate-limit store: one counter per key per window, O(1) per request.
 *
 * @nestjs/throttler's own in-memory store keeps one timestamp per hit and filters them all on every
 * request, so a key allowed N requests per window pays O(N) per request; the benchmarks measured it
 * doubling the CPU of an authenticated request at a limit of some thousands per minute (see
 * docs/benchmarks.md). The limits this product sets are fixed windows (rate-limiter.service.ts), so
 * a counter is all they need.
 *
 * Results mean what the RateLimiter reads from any ThrottlerStorage: without a block duration, a
 * hit over the limit is refused and not counted (`totalHits` = limit + 1); with one, the hit that
 * goes over starts a block during which every hit is refused, and the count starts again after it.
 */
export class FixedWindowThrottlerStorage implements ThrottlerStorage {
  private readonly windows = new Map<string, Window>();
  private nextSweep = 0;

  constructor(private readonly now: () => number = Date.now) {}

  /** Keys held now (for tests). */
  get size(): number {
    return this.windows.size;
  }

  async increment(key: string, ttl: number, limit: number, blockDuration: number, throttlerName: string): Promise<ThrottlerStorageRecord> {
    const now = this.now();
    this.sweep(now);
    const id = `${throttlerName}\u0000${key}`;
    let w = this.windows.get(id);
    if (!w) {
      w = { hits: 0, resetsAt: now + ttl, blockedUntil: 0 };
      this.windows.set(id, w);
    }
    if (w.blockedUntil !== 0 && w.blockedUntil <= now) {
      // A block that ran out starts a fresh window.
      w.hits = 0;
      w.blockedUntil = 0;
      w.resetsAt = now + ttl;
    } else if (w.resetsAt <= now && w.blockedUntil === 0) {
      w.hits = 0;
      w.resetsAt = now + ttl;
    }
    const timeToExpire = seconds(w.resetsAt - now);

    if (blockDuration <= 0) {
      const over = w.hits >= limit;
      if (!over) w.hits++;
      return { totalHits: w.hits + (over ? 1 : 0), timeToExpire, isBlocked: over, timeToBlockExpire: over ? timeToExpire : 0 };
    }
    if (w.blockedUntil === 0) {
      w.hits++;
      if (w.hits > limit) w.blockedUntil = now + blockDuration;
    }
    const isBlocked = w.blockedUntil > now;
    return { totalHits: w.hits, timeToExpire, isBlocked, timeToBlockExpire: isBlocked ? seconds(w.blockedUntil - now) : 0 };
  }

  private sweep(now: number): void {
    if (now < this.nextSweep) return;
    this.nextSweep = now + SWEEP_EVERY_MS;
    for (const [id, w] of this.windows) {
      if (w.resetsAt <= now && w.blockedUntil <= now) this.windows.delete(id);
    }
  }
}

function seconds(ms: number): number {
  return Math.max(0, Math.ceil(ms / 1000));
}
