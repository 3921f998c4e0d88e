import type { DataSource, EntityManager, QueryRunner } from 'typeorm';
import type { Queryable } from './tool-call-rows';

/**
 * The transaction an approved call's effect writes in (`ctx.effect`) and its settlement commits:
 * the product's database holds the effect and the call's outcome (with its audit event) both or
 * neither. Were they two transactions, a process that died between them (or a settlement that
 * failed) left a memory kept by a call that read `failed / interrupted`.
 *
 * It opens at the first write, not before the tool runs: a tool's reads before its effect go
 * through the pool as usual, and a tool that writes nothing holds no transaction (a vendor's MCP
 * tool never does). From then until the settlement it holds a connection, so the tool queries only
 * through the manager it is handed (the embedded database has one connection).
 */
export class CallTransaction {
  private runner?: QueryRunner;
  /** Writes one after another on the one connection; the settlement waits for the last. */
  private writes: Promise<unknown> = Promise.resolve();
  private settled = false;

  constructor(private readonly dataSource: DataSource) {}

  /** Runs `write` in the transaction, opening it first. A write that throws rolls back every write of the call. */
  run<T>(write: (db: EntityManager) => Promise<T>): Promise<T> {
    const done = this.writes.then(async () => {
      if (this.settled) throw new Error('invariant: a tool wrote after its call was settled');
      if (!this.runner) this.runner = await this.begin();
      try {
        return await write(this.runner.manager);
      } catch (err) {
        // PostgreSQL refuses every statement of a transaction after an error: nothing of it could commit.
        await this.rollBack();
        throw err;
      }
    });
    this.writes = done.catch(() => undefined);
    return done;
  }

  /**
   * Settles the call: `settle` runs in the transaction and commits with what the tool wrote, when
   * `keep` (the call succeeded) and `settle` answers a row. Otherwise the writes are rolled back
   * (a failed call changed nothing; `undefined`: the call had already been settled, by the sweeper
   * past its lease, and what it says stands) and `settle` runs alone.
   */
  async settle<T>(keep: boolean, settle: (db: Queryable) => Promise<T | undefined>): Promise<T | undefined> {
    await this.writes;
    this.settled = true;
    const runner = this.runner;
    this.runner = undefined;
    if (!runner) return settle(this.dataSource);
    if (keep) {
      try {
        const row = await settle(runner.manager);
        if (row === undefined) await runner.rollbackTransaction();
        else await runner.commitTransaction();
        return row;
      } catch (err) {
        if (runner.isTransactionActive) await runner.rollbackTransaction().catch(() => undefined);
        throw err;
      } finally {
        await runner.release();
      }
    }
    try {
      await runner.rollbackTransaction();
    } finally {
      await runner.release();
    }
    // Released first: with one connection, settling alone needs the one the writes held.
    return settle(this.dataSource);
  }

  /** Rolls back what was written when the call is not settled here (an error on the way). Nothing once settled. */
  async abandon(): Promise<void> {
    await this.writes;
    this.settled = true;
    await this.rollBack();
  }

  private async begin(): Promise<QueryRunner> {
    const runner = this.dataSource.createQueryRunner();
    try {
      await runner.connect();
      await runner.startTransaction();
      return runner;
    } catch (err) {
      await runner.release();
      throw err;
    }
  }

  private async rollBack(): Promise<void> {
    const runner = this.runner;
    this.runner = undefined;
    if (!runner) return;
    try {
      // A connection that broke has ended its transaction with it; releasing is all that is left.
      if (runner.isTransactionActive) await runner.rollbackTransaction().catch(() => undefined);
    } finally {
      await runner.release();
    }
  }
}
