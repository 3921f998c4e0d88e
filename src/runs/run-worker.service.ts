import { Inject, Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { APP_CONFIG, AppConfig } from '../config/app-config';
import { CallSettledNotifier } from '../runtime/call-settled.notifier';
import { RunEngine } from './run-engine.service';
import { mayStart, sharedLeft, SlotCaps } from './run-slots';
import { RunsRepository } from './runs.repository';

/**
 * Each node's share of the runs. It steps the runs it creates at once (when it steps fewer than
 * RUN_MAX_CONCURRENT, and fewer than RUN_MAX_CONCURRENT_PER_ORG of the run's organization, and
 * when the organization steps some here already, while RUN_RESERVED_FOR_NEW_ORGS slots stay free), and
 * every poll interval it claims the runs that need a node, organizations in turn: ones whose node died (the lease expired), ones due for a retry,
 * and waiting ones whose approvals were all decided or expired, on whatever node. A decision made
 * in this process wakes it at once (the executor's settled-call notifier), so the common case does
 * not wait for the poll. While it steps a run it renews the lease; if renewal fails (another node
 * took the run over, or it was cancelled) the step is aborted and writes nothing more.
 */
@Injectable()
export class RunWorker implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger(RunWorker.name);
  /** This process's name on the leases it holds. */
  readonly owner = `node-${randomUUID()}`;
  readonly leaseMs: number;
  private readonly active = new Map<string, { orgId: string; abort: AbortController; done: Promise<void> }>();
  /** Runs stepping here per organization (only organizations with some). */
  private readonly perOrg = new Map<string, number>();
  private timer?: NodeJS.Timeout;
  private polling?: Promise<void>;
  private pollAgain = false;
  private stopping = false;
  private unwatch?: () => void;

  constructor(
    private readonly repo: RunsRepository,
    private readonly engine: RunEngine,
    private readonly settled: CallSettledNotifier,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {
    this.leaseMs = config.runs.leaseMs;
  }

  onApplicationBootstrap(): void {
    this.unwatch = this.settled.watch(() => this.poke());
    this.timer = setInterval(() => this.poke(), this.config.runs.pollIntervalMs);
    this.timer.unref();
    this.poke();
  }

  /** Before the database closes: stop claiming, abort the steps in progress and give their runs back. */
  async onModuleDestroy(): Promise<void> {
    this.stopping = true;
    this.unwatch?.();
    if (this.timer) clearInterval(this.timer);
    await this.polling?.catch(() => undefined);
    const steps = [...this.active.entries()];
    steps.forEach(([, s]) => s.abort.abort());
    await Promise.all(steps.map(([, s]) => s.done.catch(() => undefined)));
    await Promise.all(steps.map(([id]) => this.repo.release(id, this.owner).catch(() => undefined)));
  }

  /** Whether this node is stepping the run now (for tests and operators' debugging). */
  isStepping(runId: string): boolean {
    return this.active.has(runId);
  }

  /** Aborts the step of a run this node is stepping (it was cancelled here); nothing if none. */
  stopLocally(runId: string): void {
    this.active.get(runId)?.abort.abort();
  }

  /**
   * Steps a run this node has just leased (a run it created, or claimed). With RUN_MAX_CONCURRENT
   * runs stepping already, or RUN_MAX_CONCURRENT_PER_ORG of its organization, or only the reserve
   * left and its organization stepping one here already (run-slots.ts), the lease is given back
   * instead: a poll (here or on another node) takes the run when a slot is free, so creating runs
   * cannot go past the operator's caps, and a few organizations cannot take every slot.
   */
  start(runId: string, orgId: string): void {
    if (this.stopping || this.active.has(runId)) return;
    if (!mayStart(this.caps(), this.active.size, this.perOrg.get(orgId) ?? 0)) {
      this.repo.release(runId, this.owner).catch((err) => this.logger.warn({ err, runId }, 'could not give back the lease of a run'));
      return;
    }
    const abort = new AbortController();
    const leaseMs = this.config.runs.leaseMs;
    const renew = setInterval(
      () => {
        this.repo
          .renew(runId, this.owner, leaseMs)
          .then((held) => {
            if (!held) abort.abort();
          })
          .catch((err) => this.logger.warn({ err, runId }, 'could not renew a run lease'));
      },
      Math.max(50, Math.floor(leaseMs / 3)),
    );
    renew.unref();
    this.perOrg.set(orgId, (this.perOrg.get(orgId) ?? 0) + 1);
    const done = this.engine.advance(runId, this.owner, abort.signal).finally(() => {
      clearInterval(renew);
      this.active.delete(runId);
      const left = (this.perOrg.get(orgId) ?? 1) - 1;
      if (left > 0) this.perOrg.set(orgId, left);
      else this.perOrg.delete(orgId);
      // A slot is free, and a run may have become ready meanwhile.
      this.poke();
    });
    this.active.set(runId, { orgId, abort, done });
  }

  /** Looks for runs to take now (coalesced: one poll at a time, and one more if asked meanwhile). */
  poke(): void {
    if (this.stopping) return;
    if (this.polling) {
      this.pollAgain = true;
      return;
    }
    this.polling = this.poll()
      .catch((err) => this.logger.error({ err }, 'run poll failed'))
      .finally(() => {
        this.polling = undefined;
        if (this.pollAgain) {
          this.pollAgain = false;
          this.poke();
        }
      });
  }

  private async poll(): Promise<void> {
    const caps = this.caps();
    const free = caps.max - this.active.size;
    if (free <= 0) return;
    const runs = await this.repo.claim(this.owner, this.config.runs.leaseMs, free, {
      taken: this.perOrg,
      max: caps.perOrg,
      shared: sharedLeft(caps, this.active.size),
    });
    for (const run of runs) this.start(run.id, run.orgId);
  }

  private caps(): SlotCaps {
    const { maxConcurrent, maxConcurrentPerOrg, reservedForNewOrgs } = this.config.runs;
    return { max: maxConcurrent, perOrg: maxConcurrentPerOrg, reserved: reservedForNewOrgs };
  }

  /** Waits for the steps in progress (tests, and the demo, use it to settle). */
  async idle(): Promise<void> {
    while (this.active.size > 0 || this.polling) {
      await Promise.all([...this.active.values()].map((s) => s.done.catch(() => undefined)));
      await this.polling?.catch(() => undefined);
    }
  }
}
