/**
 * At most `max` uses per key in any `windowMs`. `take` counts one use and answers 0, or answers
 * how long until one frees and counts nothing. What it keeps per key is at most `max` times; keys
 * whose uses have all left the window are forgotten as the map grows.
 */
export class WindowBudget {
  private readonly uses = new Map<string, number[]>();

  constructor(
    private readonly max: number,
    private readonly windowMs: number,
  ) {}

  take(key: string, now = Date.now()): number {
    const times = (this.uses.get(key) ?? []).filter((at) => now - at < this.windowMs);
    if (times.length >= this.max) {
      this.uses.set(key, times);
      return times[0] + this.windowMs - now;
    }
    if (this.uses.size >= FORGET_PAST_KEYS && !this.uses.has(key)) this.forgetIdle(now);
    times.push(now);
    this.uses.set(key, times);
    return 0;
  }

  private forgetIdle(now: number): void {
    for (const [key, times] of this.uses) if (now - times[times.length - 1] >= this.windowMs) this.uses.delete(key);
  }
}

/** Keys held before idle ones are looked for: one walk of the map per this many new keys at most. */
const FORGET_PAST_KEYS = 1024;
