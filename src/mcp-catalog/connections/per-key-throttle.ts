/**
 * Runs a key's work at most once per interval. The first request runs at once; the ones that come
 * within the interval after a run are folded into one run at its end, so the latest state is still
 * picked up, however many came. Nothing is kept for a key whose interval passed quietly.
 */
export class PerKeyThrottle {
  private readonly keys = new Map<string, { timer: NodeJS.Timeout; pending?: () => void }>();

  constructor(private readonly intervalMs: number) {}

  request(key: string, work: () => void): void {
    const held = this.keys.get(key);
    if (held) {
      held.pending = work;
      return;
    }
    this.run(key, work);
  }

  close(): void {
    for (const { timer } of this.keys.values()) clearTimeout(timer);
    this.keys.clear();
  }

  private run(key: string, work: () => void): void {
    const timer = setTimeout(() => {
      const pending = this.keys.get(key)?.pending;
      this.keys.delete(key);
      if (pending) this.run(key, pending);
    }, this.intervalMs);
    timer.unref();
    this.keys.set(key, { timer });
    work();
  }
}
