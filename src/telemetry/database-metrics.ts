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

  private async readPendingApprovals(): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    try {
      const query = pendingApprovalsSummary(this.dataSource);
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error('timed out')), SCRAPE_QUERY_TIMEOUT_MS);
      });
      const row = await Promise.race([query, timeout]);
      this.metrics.approvalsWaiting(row.n, row.oldest);
    } catch (err) {
      // A scrape must answer while the database does not: the gauges keep their last values, and
      // db_query_errors_total and the readiness probe tell the story.
      this.logger.warn(`pending approvals not read for the metrics: ${(err as Error).message}`);
    } finally {
      clearTimeout(timer);
    }
  }
}
