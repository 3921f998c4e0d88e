import { Logger, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';

/**
 * A pass a node runs every SWEEP_INTERVAL_SECONDS over what time leaves behind (the delivery log's
 * retention, the endpoints' backlog marks): one pass at a time, shared by overlapping callers, never
 * keeping the process alive, and finished (no other started) before the database connection closes.
 */
export abstract class IntervalSweeper<Report> implements OnApplicationBootstrap, OnModuleDestroy {
  protected abstract readonly logger: Logger;
  /** What the warning says failed, e.g. `removing old webhook deliveries`. */
  protected abstract readonly what: string;
  private timer?: NodeJS.Timeout;
  private running?: Promise<Report>;
  /** Set once the module stops: a pass checks it between its statements. */
  protected stopped = false;

  constructor(private readonly intervalMs: number) {}

  onApplicationBootstrap(): void {
    this.timer = setInterval(() => {
      this.sweepOnce().catch((err) => this.logger.warn(`${this.what} failed: ${(err as Error).message}`));
    }, this.intervalMs);
    this.timer.unref();
  }

  /** Before the database connection closes: the statement in progress ends, no other starts. */
  async onModuleDestroy(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    await this.running?.catch(() => undefined);
  }

  /** One pass; overlapping calls share the pass in progress. */
  sweepOnce(): Promise<Report> {
    this.running ??= this.sweep().finally(() => (this.running = undefined));
    return this.running;
  }

  protected abstract sweep(): Promise<Report>;

  /**
   * Calls `remove` (one statement, at most `batch` rows) until it removes fewer than a batch (nothing
   * more is due, or another node holds the rest) or the module stops: a backlog goes in many brief
   * statements, never one long lock. What was removed, in how many statements.
   */
  protected async inBatches(batch: number, remove: () => Promise<number>): Promise<{ removed: number; batches: number }> {
    let removed = 0;
    let batches = 0;
    while (!this.stopped) {
      const n = await remove();
      batches++;
      removed += n;
      if (n < batch) break;
    }
    return { removed, batches };
  }
}
