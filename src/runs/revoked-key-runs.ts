import { Injectable, OnModuleInit } from '@nestjs/common';
import { ApiKeyRevocations, RevokedKey } from '../auth/api-key-revocations';
import type { EntityManager } from 'typeorm';
import { AuditService } from '../audit/audit.service';
import { ApprovalsRepository } from '../tool-calls/approvals.repository';
import { CancelledRunApprovals } from './cancelled-run-approvals';
import { RunSignals } from './run-signals';
import { RunWorker } from './run-worker.service';
import { RunsRepository } from './runs.repository';
import { Metrics } from '../telemetry/metrics';

/**
 * A run acts for the API key that started it. When that key is revoked, its runs that have not
 * finished fail (`unauthorized`, as the run would find at its next step) and their pending
 * approvals are rejected naming the cause, in the revocation's transaction: before, the run only
 * noticed at its next step, which an approval of its call came before, running a side effect for a
 * run that then failed without reading it.
 *
 * In a number of statements that does not grow with the runs: a key may leave thousands waiting
 * (its rate limit makes 1,200 a minute), and the key stays accepted until the revocation commits.
 */
@Injectable()
export class RevokedKeyRuns implements OnModuleInit {
  constructor(
    private readonly revocations: ApiKeyRevocations,
    private readonly repo: RunsRepository,
    private readonly approvals: CancelledRunApprovals,
    private readonly approvalRows: ApprovalsRepository,
    private readonly audit: AuditService,
    private readonly signals: RunSignals,
    private readonly worker: RunWorker,
    private readonly metrics: Metrics,
  ) {}

  onModuleInit(): void {
    this.revocations.listen((m, key) => this.end(m, key));
  }

  private async end(m: EntityManager, key: RevokedKey): Promise<() => void> {
    const { runs, approvals } = await this.repo.failRunsOfKey(m, key.orgId, key.keyId, (run) => ({
      type: 'run.failed',
      orgId: key.orgId,
      actor: key.actor,
      target: { type: 'run', id: run.id },
      data: { agentId: run.agent_id, version: run.version, usage: run.usage, error: { code: 'unauthorized' }, cause: 'api_key_revoked', apiKeyId: key.keyId },
    }));
    const end = { cause: 'api_key_revoked' as const, actor: key.actor, keyId: key.keyId };
    const rejected = await this.approvalRows.rejectOfRuns(
      m,
      key.orgId,
      approvals.map((a) => a.id),
      CancelledRunApprovals.noteAround(end),
      new Date(),
    );
    await this.audit.record(m, ...rejected.map((r) => CancelledRunApprovals.rejectionEvent(key.orgId, end, { ...r, reason: r.note })));
    const decided = new Map<string, string[]>();
    for (const r of rejected) decided.set(r.runId, [...(decided.get(r.runId) ?? []), r.toolCallId]);
    return () => {
      for (const r of rejected) this.metrics.approvalDecided('rejected', (Date.now() - new Date(r.createdAt).getTime()) / 1000);
      for (const run of runs) {
        // Counted once the revocation committed, as every other run status is.
        this.metrics.runStatus('failed');
        // Stepped here: stopped now, so a model call in flight is aborted; another node when the revocation's commit wakes it (RunWorker).
        this.worker.stopLocally(run.id);
        this.signals.notify(run.id);
        this.approvals.notify(run.id, decided.get(run.id) ?? []);
      }
    };
  }
}
