import { Inject, Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { APP_CONFIG, AppConfig } from '../config/app-config';
import { CallSettledNotifier } from '../runtime/call-settled.notifier';
import { IdempotencyRepository } from './idempotency.repository';
import { Metrics } from '../telemetry/metrics';
import { ToolCallMaintenanceRepository } from './tool-call-maintenance.repository';

/** Rows one statement of a sweep takes: approvals expired (each with its call and event), keys removed. */
const APPROVALS_PER_BATCH = 500;
const KEYS_PER_BATCH = 1000;
/**
 * Batches one sweep makes of each kind at most, while they come back full. One batch a sweep (2,000
 * approvals and 4,000 keys a minute a node, every organization together) fell behind what one
 * organization may write within its rate limit (6,000 calls a minute a node, each with a key and,
 * for a side effect, an approval; attack round 13, M-F4): the keys piled up for good, and every
 * organization's approvals were expired after that one's. Each batch is a statement of its own.
 */
export const SWEEP_MAX_BATCHES = 40;

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
  /** Set by `stop`: a sweep in progress finishes the batch it is in and takes no more. */
  private stopping = false;

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
    this.stopping = false;
    this.timer = setInterval(() => {
      this.sweepOnce().catch((err) => this.logger.error({ err }, 'sweep failed'));
    }, intervalMs);
    // The sweeper never keeps a process alive on its own.
    this.timer.unref();
  }

  /** Stops the interval and waits for a sweep in progress, so shutdown never cuts one in half. */
  async stop(): Promise<void> {
    this.stopping = true;
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
    const expired: { orgId: string; callId: string }[] = [];
    for (let i = 0; i < SWEEP_MAX_BATCHES; i++) {
      const batch = await this.store.expireApprovals(undefined, APPROVALS_PER_BATCH);
      expired.push(...batch);
      if (batch.length < APPROVALS_PER_BATCH || this.stopping) break;
    }
    let keysDeleted = 0;
    for (let i = 0; i < SWEEP_MAX_BATCHES; i++) {
      const deleted = await this.keys.deleteExpired(KEYS_PER_BATCH);
      keysDeleted += deleted;
      if (deleted < KEYS_PER_BATCH || this.stopping) break;
    }
    // An expired approval waited its whole time to live.
    for (let i = 0; i < expired.length; i++) this.metrics.approvalDecided('expired', this.config.approvalTtlSeconds);
    this.settled.notify([...interrupted, ...expired].map((c) => c.callId));
    if (interrupted.length || expired.length) {
      this.logger.log({ interrupted: interrupted.length, expired: expired.length }, 'swept tool calls');
    }
    return { interrupted: interrupted.length, expired: expired.length, keysDeleted };
  }
}
