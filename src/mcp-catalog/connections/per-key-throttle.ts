/**
 * Runs a key's work at most once per interval. The first request runs at once; the ones that come
 * within the interval after a run are folded into one run at its end, so the latest state is still
 * picked up, however many came.
 *
 * A key that keeps asking waits longer each time, up to `maxIntervalMs`: the interval doubles for
 * a run that follows the last within an interval of its end (folded, or asked for just after it).
 * A server sending list_changed without end otherwise had its connection listed every 30 s, each
 * listing up to 0.2 s of the node and an audited event of up to 46 KB (attack round 21, AD-N1).
 * Nothing is kept for a key quiet for an interval after its last hold ended.
 */
export class PerKeyThrottle {
  private readonly keys = new Map<string, { timer: NodeJS.Timeout; intervalMs: number; pending?: () => void; quiet?: boolean }>();

  constructor(
    private readonly intervalMs: number,
    private readonly maxIntervalMs = intervalMs,
  ) {}

  request(key: string, work: () => void): void {
    const held = this.keys.get(key);
    if (held && !held.quiet) {
      held.pending = work;
      return;
    }
    if (held) clearTimeout(held.timer);
    this.run(key, work, held ? this.longer(held.intervalMs) : this.intervalMs);
  }

  close(): void {
    for (const { timer } of this.keys.values()) clearTimeout(timer);
    this.keys.clear();
  }

  private longer(intervalMs: number): number {
    return Math.min(intervalMs * 2, this.maxIntervalMs);
  }

  private run(key: string, work: () => void, intervalMs: number): void {
    const timer = setTimeout(() => {
      const held = this.keys.get(key);
      if (held?.pending) return this.run(key, held.pending, this.longer(intervalMs));
      if (!held) return;
      // Remembered one interval more, so a key that asks again just after the hold still waits longer.
      held.quiet = true;
      held.timer = setTimeout(() => this.keys.delete(key), intervalMs);
      held.timer.unref();
    }, intervalMs);
    timer.unref();
    this.keys.set(key, { timer, intervalMs });
    work();
  }
}
