import { Inject, Injectable, Logger } from '@nestjs/common';
import { APP_CONFIG, AppConfig } from '../config/app-config';
import { IntervalSweeper } from '../events/interval-sweeper';
import { RunStorageRepository } from '../runtime/run-storage.repository';

/**
 * Runs one statement removes with their events. A run holds up to its transcript bound and its
 * events, so a batch is kept small enough that one statement stays brief.
 */
export const RUN_RETENTION_BATCH = 100;

/**
 * Keeps finished runs RUN_RETENTION_DAYS after they ended (off at 0, the default): the transcripts
 * and events are what fills RUNS_MAX_BYTES_PER_ORG, and an organization at its bound starts runs
 * again once old ones are gone. Each node sweeps every SWEEP_INTERVAL_SECONDS, batch after batch.
 */
@Injectable()
export class RunRetentionSweeper extends IntervalSweeper<number> {
  protected readonly logger = new Logger(RunRetentionSweeper.name);
  protected readonly what = 'removing runs past RUN_RETENTION_DAYS';

  constructor(
    private readonly storage: RunStorageRepository,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {
    super(config.sweepIntervalMs);
  }

  protected async sweep(): Promise<number> {
    const retentionMs = this.config.runs.retentionMs ?? 0;
    if (retentionMs <= 0) return 0;
    const { removed } = await this.inBatches(RUN_RETENTION_BATCH, () => this.storage.deleteFinishedRuns(retentionMs, RUN_RETENTION_BATCH));
    if (removed) this.logger.log(`removed ${removed} runs finished more than RUN_RETENTION_DAYS ago`);
    return removed;
  }
}
