import { Inject, Injectable, Logger } from '@nestjs/common';
import { APP_CONFIG, AppConfig } from '../config/app-config';
import { IntervalSweeper } from '../events/interval-sweeper';
import { ApiKeysRepository } from './api-keys.repository';

/** Keys one statement records; a sweep writes what it holds in batches of this many. */
const USE_BATCH = 1000;

/**
 * When each API key was last used (`lastUsedAt`), so administrators can find and revoke the keys
 * nothing uses any more. Writing the key's row on every request would put a write, and a row lock
 * that revocations wait behind, on the hot path of every call; each node instead keeps the latest
 * use of each key in memory (one map entry per live key it served) and writes them once a sweep.
 * What a node held when it stopped abruptly is lost: the time is a hint, never a decision.
 */
@Injectable()
export class ApiKeyUsage extends IntervalSweeper<number> {
  protected readonly logger = new Logger(ApiKeyUsage.name);
  protected readonly what = 'recording when API keys were last used';
  private pending = new Map<string, number>();

  constructor(
    private readonly keys: ApiKeysRepository,
    @Inject(APP_CONFIG) config: AppConfig,
  ) {
    super(config.sweepIntervalMs);
  }

  /** The key authenticated a request now. */
  seen(keyId: string): void {
    this.pending.set(keyId, Date.now());
  }

  /** A stopping node writes what it holds, once its sweep in progress has ended. */
  override async onModuleDestroy(): Promise<void> {
    await super.onModuleDestroy();
    await this.sweep().catch((err: Error) => this.logger.warn(`${this.what} failed: ${err.message}`));
  }

  protected async sweep(): Promise<number> {
    const taken = this.pending;
    this.pending = new Map();
    const uses = [...taken].map(([id, at]) => ({ id, at: new Date(at) }));
    let written = 0;
    for (let i = 0; i < uses.length; i += USE_BATCH) {
      const batch = uses.slice(i, i + USE_BATCH);
      try {
        const skipped = new Set(await this.keys.recordUse(batch));
        written += batch.length - skipped.size;
        // Held by another transaction: kept for the next sweep, unless the key was used again since.
        for (const u of batch) if (skipped.has(u.id) && !this.pending.has(u.id)) this.pending.set(u.id, u.at.getTime());
      } catch (err) {
        for (const u of uses.slice(i)) if (!this.pending.has(u.id)) this.pending.set(u.id, u.at.getTime());
        throw err;
      }
    }
    return written;
  }
}
