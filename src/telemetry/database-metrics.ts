import { Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { pendingApprovalsSummary } from '../tool-calls/approvals.repository';
import { Metrics } from './metrics';

/** What a `pg` pool says about itself (pg.Pool's public counters). */
interface PoolCounters {
  totalCount: number;
  idleCount: number;
  waitingCount: number;
  options?: { max?: number };
}

/** How long a scrape waits for the pending-approvals figure before reporting the last one read. */
const SCRAPE_QUERY_TIMEOUT_MS = 1000;
/**
 * How long a pending-approvals figure (or a failed read) stands before scrapes read it again.
 * /metrics may be public: however many scrape it, the database sees at most one such query per
 * interval, never two at once.
 */
export const PENDING_APPROVALS_REUSE_MS = 2000;

/**
 * Database figures for the metrics: pool use (read from the pool at scrape time), query latency
 * (from TypeORM's after-query event, which every query through the ORM's query runners raises,
 * raw `dataSource.query` included), and the approvals waiting for a decision.
 */
@Injectable()
export class DatabaseMetrics implements OnModuleInit {
  private readonly logger = new Logger(DatabaseMetrics.name);

  constructor(
    private readonly dataSource: DataSource,
    private readonly metrics: Metrics,
  ) {}

  onModuleInit(): void {
    const pool = (): PoolCounters | undefined => (this.dataSource.driver as unknown as { master?: PoolCounters }).master;
    this.metrics.gauge('db_pool_max_connections', 'Connections the pool may open.', () => pool()?.options?.max);
    this.metrics.gauge('db_pool_open_connections', 'Connections the pool holds open (busy and idle).', () => pool()?.totalCount);
    this.metrics.gauge('db_pool_idle_connections', 'Open connections not in use.', () => pool()?.idleCount);
    this.metrics.gauge(
      'db_pool_waiting_requests',
      'Requests waiting for a connection: above 0 for long, the pool is too small or a query is slow.',
      () => pool()?.waitingCount,
    );

    const metrics = this.metrics;
    this.dataSource.subscribers.push({
      afterQuery(event) {
        metrics.dbQuery(event.success && event.executionTime !== undefined ? event.executionTime / 1000 : undefined);
      },
    });

    this.metrics.onScrape(() => this.readPendingApprovals());
  }

  /** The read in flight: every scrape arriving meanwhile waits on this one rather than querying. */
  private reading?: Promise<void>;
  /** When the last read ended (Date.now()), whatever its outcome. */
  private lastReadEnded = -Infinity;
  /** A read failed or was slow and none has succeeded since: the warning was logged already. */
  private failing = false;

  private readPendingApprovals(): Promise<void> {
    if (!this.reading && Date.now() - this.lastReadEnded < PENDING_APPROVALS_REUSE_MS) return Promise.resolve();
    this.reading ??= this.read().finally(() => {
      this.reading = undefined;
      this.lastReadEnded = Date.now();
    });
    // A scrape must answer while the database does not: past the timeout it reports the last
    // values, and the read goes on (still the only one) for the scrapes that follow.
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<void>((resolve) => {
      timer = setTimeout(() => {
        this.warnOnce('timed out');
        resolve();
      }, SCRAPE_QUERY_TIMEOUT_MS);
    });
    return Promise.race([this.reading, timeout]).finally(() => clearTimeout(timer));
  }

  private async read(): Promise<void> {
    try {
      const row = await pendingApprovalsSummary(this.dataSource);
      this.metrics.approvalsWaiting(row.n, row.oldest);
      if (this.failing) this.logger.log('pending approvals read again for the metrics');
      this.failing = false;
    } catch (err) {
      // The gauges keep their last values; db_query_errors_total and the readiness probe tell the story.
      this.warnOnce((err as Error).message);
    }
  }

  /** One line per failure streak: a flood of scrapes against a sick database must not flood the log too. */
  private warnOnce(reason: string): void {
    if (this.failing) return;
    this.failing = true;
    this.logger.warn(`pending approvals not read for the metrics: ${reason} (not logged again until a read succeeds)`);
  }
}
