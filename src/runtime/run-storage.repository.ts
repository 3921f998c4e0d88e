import { Inject, Injectable } from '@nestjs/common';
import { DataSource, EntityManager } from 'typeorm';
import { ApiError } from '../common/api-error';
import { APP_CONFIG, AppConfig } from '../config/app-config';
import { DEFAULT_STORAGE_LIMITS } from '../config/database-config';
import { countingTransaction, holdOrgCountLock } from '../database/org-limit';

/**
 * What an organization's runs and tool calls store, against RUNS_MAX_BYTES_PER_ORG. The database
 * keeps the total as changes appended by triggers (`run_usage`, migration `1764523000000`): a step
 * never waits on another to count what it wrote. The bound is checked where storing more is a
 * choice (a run starting, a whole result kept apart), never mid-step: a run under way finishes,
 * so the total can pass the bound by what the runs then in progress add.
 */
@Injectable()
export class RunStorageRepository {
  readonly maxBytes: number;

  constructor(
    readonly dataSource: DataSource,
    @Inject(APP_CONFIG) config: AppConfig,
  ) {
    this.maxBytes = (config.storage ?? DEFAULT_STORAGE_LIMITS).runBytesPerOrg;
  }

  async stored(orgId: string): Promise<number> {
    const [row]: { bytes: string }[] = await this.dataSource.query(`SELECT coalesce(sum(bytes), 0)::text AS bytes FROM run_usage WHERE org_id = $1`, [orgId]);
    return Number(row.bytes);
  }

  /**
   * The organization's approvals waiting for a decision, counted up to `upTo` (its bound,
   * APPROVALS_MAX_PENDING_PER_ORG) through the index of its approvals by status: each holds a call
   * and its events for as long as it waits (a day by default), and nothing else bounded how many.
   */
  async pendingApprovals(orgId: string, upTo: number, m: Pick<EntityManager, 'query'> = this.dataSource): Promise<number> {
    const [row]: { n: number }[] = await m.query(
      // In the order of (org_id, status, created_at) so that no plan walks every organization's pending approvals (their expiry index).
      `SELECT count(*)::int AS n FROM (SELECT 1 FROM approval WHERE org_id = $1 AND status = 'pending' ORDER BY created_at DESC LIMIT $2) waiting`,
      [orgId, upTo],
    );
    return row.n;
  }

  /**
   * `work` in a transaction that holds the organization's lock for pending approvals, in its turn on
   * this node (countingTransaction), when it has fewer than `max` waiting; undefined, nothing done,
   * when it has `max`. Counted apart from the write, 100 calls asked for at once all saw room and 100
   * approvals waited against a bound of 10 (attack round 22, AF-F2).
   */
  async withRoomForApproval<T>(orgId: string, max: number, work: (m: EntityManager) => Promise<T>): Promise<T | undefined> {
    return countingTransaction(this.dataSource, 'approval', orgId, async (m) => {
      await holdOrgCountLock(m, 'approval', orgId);
      return (await this.pendingApprovals(orgId, max, m)) >= max ? undefined : work(m);
    });
  }

  async full(orgId: string): Promise<boolean> {
    return (await this.stored(orgId)) >= this.maxBytes;
  }

  /** `409 conflict` once the organization stores its bound: what is about to start would store more. */
  async assertRoomForRun(orgId: string): Promise<void> {
    const stored = await this.stored(orgId);
    if (stored >= this.maxBytes) {
      throw ApiError.conflict(
        `This organization's runs and tool calls hold ${stored} bytes (inputs, transcripts, answers, run events, tool calls and the answers idempotency keys keep) of the ${this.maxBytes} they may store (RUNS_MAX_BYTES_PER_ORG); no run was started. Ask the operator for more, or to keep finished runs for fewer days (RUN_RETENTION_DAYS).`,
      );
    }
  }

  /**
   * Removes at most `batch` runs that ended more than `retentionMs` ago, with their events (their
   * tool calls stay: the record of what was done); how many. Here rather than in RunsRepository
   * because it is about what is stored: a finished run no longer changes, and the triggers give its
   * bytes back. Nodes removing at once skip each other's runs.
   */
  async deleteFinishedRuns(retentionMs: number, batch: number): Promise<number> {
    const [, count]: [unknown[], number] = await this.dataSource.query(
      `WITH doomed AS (
         SELECT id FROM run
          WHERE completed_at < now() - $1 * interval '1 millisecond' AND status IN ('succeeded', 'failed', 'cancelled')
          ORDER BY completed_at LIMIT $2 FOR UPDATE SKIP LOCKED
       ), events AS (
         DELETE FROM run_event WHERE run_id = ANY (ARRAY(SELECT id FROM doomed))
       )
       DELETE FROM run WHERE id = ANY (ARRAY(SELECT id FROM doomed))`,
      [retentionMs, batch],
    );
    return count;
  }

  /**
   * Folds each organization's appended changes into one row; the rows folded. Nodes folding at
   * once do not count a change twice: a row another node deleted first is skipped, and a change
   * appended meanwhile is not seen and stays for the next pass.
   */
  async compact(): Promise<number> {
    const [{ n }]: { n: number }[] = await this.dataSource.query(`
      WITH folded AS (
        DELETE FROM run_usage WHERE org_id IN (SELECT org_id FROM run_usage GROUP BY org_id HAVING count(*) > 1)
        RETURNING org_id, bytes
      ), kept AS (
        INSERT INTO run_usage (org_id, bytes) SELECT org_id, sum(bytes) FROM folded GROUP BY org_id
      )
      SELECT count(*)::int AS n FROM folded`);
    return n;
  }
}
