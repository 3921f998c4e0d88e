import { Inject, Injectable, Logger } from '@nestjs/common';
import { APP_CONFIG, AppConfig } from '../config/app-config';
import { IntervalSweeper } from '../events/interval-sweeper';
import { RunStorageRepository } from './run-storage.repository';

/**
 * Every step of a run appends what it changed of its organization's stored bytes (see
 * RunStorageRepository); folded every SWEEP_INTERVAL_SECONDS, an organization's total is read from
 * its one row and the changes of the last interval.
 */
@Injectable()
export class RunUsageCompactor extends IntervalSweeper<number> {
  protected readonly logger = new Logger(RunUsageCompactor.name);
  protected readonly what = "folding runs' stored bytes";

  constructor(
    private readonly storage: RunStorageRepository,
    @Inject(APP_CONFIG) config: AppConfig,
  ) {
    super(config.sweepIntervalMs);
  }

  protected sweep(): Promise<number> {
    return this.storage.compact();
  }
}
