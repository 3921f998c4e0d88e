import { Injectable, OnModuleInit } from '@nestjs/common';
import { ApiKeyRevocations, RevokedKey } from '../auth/api-key-revocations';
import type { EntityManager } from 'typeorm';
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
 */
@Injectable()
export class RevokedKeyRuns implements OnModuleInit {
  constructor(
    private readonly revocations: ApiKeyRevocations,
    private readonly repo: RunsRepository,
    private readonly approvals: CancelledRunApprovals,
    private readonly signals: RunSignals,
    private readonly worker: RunWorker,
    private readonly metrics: Metrics,
  ) {}

  onModuleInit(): void {
    this.revocations.listen((m, key) => this.end(m, key));
  }

  private async end(m: EntityManager, key: RevokedKey): Promise<() => void> {
    const runs = await this.repo.failRunsOfKey(m, key.orgId, key.keyId, (run) => ({
      type: 'run.failed',
      orgId: key.orgId,
      actor: key.actor,
      target: { type: 'run', id: run.id },
      data: { agentId: run.agent_id, version: run.version, usage: run.usage, error: { code: 'unauthorized' }, cause: 'api_key_revoked', apiKeyId: key.keyId },
    }));
    const decided = new Map<string, string[]>();
    for (const run of runs) {
      const end = { cause: 'api_key_revoked' as const, actor: key.actor, keyId: key.keyId };
      decided.set(run.id, await this.approvals.reject(key.orgId, { id: run.id, agentId: run.agent_id }, end, m));
    }
    return () => {
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
