import { Inject, Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { APP_CONFIG, AppConfig } from '../config/app-config';
import { EventWakeups, Wakeup } from '../events/event-wakeups.service';
import { CallSettledNotifier } from '../runtime/call-settled.notifier';
import { RunEngine } from './run-engine.service';
import { mayStart, sharedLeft, SlotCaps } from './run-slots';
import { RunsRepository } from './runs.repository';
import { detachedFromCaller } from '../telemetry/trace-context';

/** Looks at the runs stepping here, prompted by other nodes' commits, at most this often. */
const HELD_CHECK_SPACING_MS = 250;

/**
 * Each node's share of the runs. It steps the runs it creates at once (when it steps fewer than
 * RUN_MAX_CONCURRENT, and fewer than RUN_MAX_CONCURRENT_PER_ORG of the run's organization, and
 * when the organization steps some here already, while RUN_RESERVED_FOR_NEW_ORGS slots stay free), and
 * every poll interval it claims the runs that need a node, organizations in turn: ones whose node died (the lease expired), ones due for a retry,
 * and waiting ones whose approvals were all decided or expired, on whatever node. A decision made
 * in this process wakes it at once (the executor's settled-call notifier), so the common case does
 * not wait for the poll. While it steps a run it renews the lease; if renewal fails (another node
 * took the run over, or it was cancelled) the step is aborted and writes nothing more. A cancel on
 * another node is learnt sooner: its commit wakes this node (EventWakeups), which then reads
 * whether it still holds the runs it steps of that organization, so a model call it pays for
 * stops within a moment, not a third of a lease later.
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
  private unwake?: () => void;
  /** Runs stepping here that another node's commit may have ended, to look at in the next check. */
  private readonly suspect = new Set<string>();
  private checkTimer?: NodeJS.Timeout;
  private checking = false;
  private lastCheck = 0;

  constructor(
    private readonly repo: RunsRepository,
    private readonly engine: RunEngine,
    private readonly settled: CallSettledNotifier,
    private readonly wakeups: EventWakeups,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {
    this.leaseMs = config.runs.leaseMs;
  }

  onApplicationBootstrap(): void {
    this.unwatch = this.settled.watch(() => this.poke());
    this.unwake = this.wakeups.onOthers((orgs) => this.othersWrote(orgs));
    this.timer = setInterval(() => this.poke(), this.config.runs.pollIntervalMs);
    this.timer.unref();
    this.poke();
  }

  /** Before the database closes: stop claiming, abort the steps in progress and give their runs back. */
  async onModuleDestroy(): Promise<void> {
    this.stopping = true;
    this.unwatch?.();
    this.unwake?.();
    clearTimeout(this.checkTimer);
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
    // Called by the request that created or resumed the run: its steps are the node's own work, not
    // spans of that request's trace, and its model calls carry none of the caller's trace headers.
    detachedFromCaller(() => this.step(runId, orgId));
  }

  private step(runId: string, orgId: string): void {
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

  /** Another node committed for these organizations: a run of theirs stepping here may have been cancelled. */
  private othersWrote(orgs: Wakeup): void {
    for (const [id, step] of this.active) if (orgs === 'all' || orgs.has(step.orgId)) this.suspect.add(id);
    if (this.suspect.size === 0 || this.checkTimer || this.checking || this.stopping) return;
    this.checkTimer = setTimeout(() => void this.checkHeld(), Math.max(0, this.lastCheck + HELD_CHECK_SPACING_MS - Date.now()));
    this.checkTimer.unref();
  }

  /** One read for every suspect run; a step whose run this node no longer holds is aborted, as on a failed renewal. */
  private async checkHeld(): Promise<void> {
    this.checkTimer = undefined;
    this.checking = true;
    this.lastCheck = Date.now();
    const ids = [...this.suspect];
    this.suspect.clear();
    try {
      const held = await this.repo.held(ids, this.owner);
      for (const id of ids) if (!held.has(id)) this.active.get(id)?.abort.abort();
    } catch (err) {
      // The lease's renewal finds it out anyway.
      this.logger.warn({ err }, 'could not read whether this node still holds its runs');
    } finally {
      this.checking = false;
      if (this.suspect.size > 0) this.othersWrote(new Set());
    }
  }

  /** Looks for runs to take now (coalesced: one poll at a time, and one more if asked meanwhile). */
  poke(): void {
    if (this.stopping) return;
    if (this.polling) {
      this.pollAgain = true;
      return;
    }
    // A poke after one organization's run takes any organization's runs.
    this.polling = detachedFromCaller(() => this.poll())
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
