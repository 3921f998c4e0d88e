import { Inject, Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { APP_CONFIG, AppConfig } from '../config/app-config';
import { CallSettledNotifier } from '../runtime/call-settled.notifier';
import { IdempotencyRepository } from './idempotency.repository';
import { Metrics } from '../telemetry/metrics';
import { ToolCallMaintenanceRepository } from './tool-call-maintenance.repository';

export interface SweepReport {
  interrupted: number;
  expired: number;
  keysDeleted: number;
}

/**
 * Keeps stored state true when nobody is asking: calls whose process died while running become
 * `failed` / `interrupted` (never re-run: a side effect happens at most once unless a person
 * decides again), approvals past their expiry become `expired`, idempotency keys past 24 hours go.
 * Every step is a conditional update, so several API nodes can sweep at once.
 */
@Injectable()
export class ToolCallSweeper implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger(ToolCallSweeper.name);
  private timer?: NodeJS.Timeout;
  private running?: Promise<SweepReport>;

  constructor(
    private readonly store: ToolCallMaintenanceRepository,
    private readonly keys: IdempotencyRepository,
    private readonly settled: CallSettledNotifier,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly metrics: Metrics,
  ) {}

  onApplicationBootstrap(): void {
    this.start();
  }

  /** Before the database connection closes (that happens at application shutdown). */
  async onModuleDestroy(): Promise<void> {
    await this.stop();
  }

  start(intervalMs = this.config.sweepIntervalMs): void {
    if (this.timer) return;
    this.timer = setInterval(() => {
      this.sweepOnce().catch((err) => this.logger.error({ err }, 'sweep failed'));
    }, intervalMs);
    // The sweeper never keeps a process alive on its own.
    this.timer.unref();
  }

  /** Stops the interval and waits for a sweep in progress, so shutdown never cuts one in half. */
  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    await this.running?.catch(() => undefined);
  }

  /** One pass; overlapping calls share the pass in progress. */
  sweepOnce(): Promise<SweepReport> {
    this.running ??= this.sweep().finally(() => (this.running = undefined));
    return this.running;
  }

  private async sweep(): Promise<SweepReport> {
    const interrupted = await this.store.interruptAbandoned();
    const expired = await this.store.expireApprovals();
    const keysDeleted = await this.keys.deleteExpired();
    // An expired approval waited its whole time to live.
    for (let i = 0; i < expired.length; i++) this.metrics.approvalDecided('expired', this.config.approvalTtlSeconds);
    this.settled.notify([...interrupted, ...expired].map((c) => c.callId));
    if (interrupted.length || expired.length) {
      this.logger.log({ interrupted: interrupted.length, expired: expired.length }, 'swept tool calls');
    }
    return { interrupted: interrupted.length, expired: expired.length, keysDeleted };
  }
}
