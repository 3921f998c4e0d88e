import { Inject, Injectable, OnModuleDestroy } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { VersionBuilder } from '../agents/version-builder.service';
import { actorOf, agentScopeOf, ApiKeyPrincipal, isOrgPrincipal, RequestContext } from '../auth/principal';
import { ApiError } from '../common/api-error';
import { OrgGate } from '../common/org-gate';
import { APP_CONFIG, AppConfig } from '../config/app-config';
import { GovernanceRepository } from '../governance/governance.repository';
import { RunStorageRepository } from '../runtime/run-storage.repository';
import { CancelledRunApprovals } from './cancelled-run-approvals';
import { ChatMessage } from './conversation';
import { ModelProvidersService } from './model-providers.service';
import { CROSS_NODE_POLL_MS, RunHeads } from './run-heads';
import { RunSignals } from './run-signals';
import { assertRoomToRun, maxRunningOf } from './running-runs';
import { RunWorker } from './run-worker.service';
import { CreateRunDto, ListRunsQuery } from './runs.dto';
import { FINISHED, RunEventRow, RunsRepository } from './runs.repository';

/** The most `Prefer: wait=N` holds a request open (API.md). */
export const MAX_WAIT_SECONDS = 60;
/**
 * Reads of run events one organization's streams make at once on a node. An event is megabytes,
 * parsed and framed on the event loop: 60 streams of a run reading alone held others' requests 9.8 s.
 */
export const RUN_EVENT_READS_PER_ORG = 4;
/**
 * Reads of runs (`GET /runs/{id}`, a page of `GET /runs`) one organization makes at once on a
 * node; the others wait their turn. A run is up to 8,000,000 characters, received from the
 * database and handed to the socket by the node: one viewer key's reads of large runs at its whole
 * rate limit took the node from every other organization (attack round 13, K-F6's rest).
 */
export const RUN_READS_PER_ORG = 2;
/** Reads of one organization waiting for their turn on a node; past it `429 rate_limited`, so waiting holds no more connections than this. */
export const RUN_READS_WAITING_PER_ORG = 64;

@Injectable()
export class RunsService implements OnModuleDestroy {
  /** Open event streams, ended at shutdown so the HTTP server can close (clients resume with Last-Event-ID). */
  private readonly streams = new Set<AbortController>();
  /**
   * The reads of run streams begun in this turn of the event loop, by what they read: the streams
   * of one run are woken together (by the run's write, or by the poll, aligned for them all) and at
   * the same position ask the same query, which is sent once. 256 streams of a run read it 256 times per step and
   * each twice a second while it waited.
   */
  private readonly reads = new Map<string, Promise<unknown>>();
  private readonly eventReads = new OrgGate(RUN_EVENT_READS_PER_ORG);
  private readonly runReads = new OrgGate(
    RUN_READS_PER_ORG,
    RUN_READS_WAITING_PER_ORG,
    (waiting) =>
      new ApiError(
        'rate_limited',
        `This organization has ${waiting} reads of runs waiting on this server, the most it may; retry shortly.`,
        undefined,
        undefined,
        { 'Retry-After': '1' },
      ),
  );
  private readonly heads: RunHeads;

  constructor(
    private readonly repo: RunsRepository,
    private readonly versions: VersionBuilder,
    private readonly providers: ModelProvidersService,
    private readonly worker: RunWorker,
    private readonly signals: RunSignals,
    private readonly cancelledApprovals: CancelledRunApprovals,
    private readonly governance: GovernanceRepository,
    private readonly storage: RunStorageRepository,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {
    this.heads = new RunHeads(repo, signals);
  }

  /**
   * Starts a run of a published version (404 not_found, 409 not_published, 409 version_retired, 409 model_not_configured, 409 conflict past
   * RUNS_MAX_BYTES_PER_ORG, 429 past RUN_MAX_RUNNING_PER_ORG) and steps it on this node at once. With `waitSeconds`, answers when the run
   * finishes or waits for approval, or when the time is up, whichever comes first.
   */
  async create(ctx: RequestContext, agentId: string, dto: CreateRunDto, waitSeconds = 0): Promise<string> {
    const principal = keyOf(ctx);
    const orgId = principal.orgId;
    const applicability = { profile: dto.profile, workerType: dto.workerType };
    const built = await this.versions.build(orgId, principal.orgScopes, agentId, dto.version ?? 'latest', undefined, { applicability });
    // The switches first, as the tool policy orders them: the answer names the decision a person made, whatever else holds.
    if (await this.governance.retirementOf(orgId, built.agentId, built.version)) {
      throw new ApiError('version_retired', `Version ${built.version} of this agent was retired; start a run of a current version. Nothing ran.`);
    }
    const model = built.spec.model;
    if (!model || !(await this.providers.exists(orgId, model.provider))) {
      throw new ApiError(
        'model_not_configured',
        `Version ${built.version} of this agent names no model (AgentSpec.model with a provider of this organization); publish one that does.`,
      );
    }
    await this.storage.assertRoomForRun(orgId);
    const maxRunning = maxRunningOf(this.config.runs.maxRunningPerOrg);
    await assertRoomToRun(this.repo, maxRunning, orgId);
    const id = randomUUID();
    const messages: ChatMessage[] = [
      ...(dto.messages ?? []).map((m): ChatMessage => (m.role === 'user' ? { role: 'user', content: m.content } : { role: 'assistant', content: m.content })),
      { role: 'user', content: dto.input },
    ];
    await this.repo.insert(
      {
        id,
        orgId,
        agentId: built.agentId,
        version: built.version,
        profile: dto.profile ?? null,
        workerType: dto.workerType ?? null,
        input: dto.input,
        messages,
        requestedBy: principal.id,
      },
      this.worker.owner,
      this.worker.leaseMs,
      [
        {
          type: 'run.started',
          data: {
            agentId: built.agentId,
            version: built.version,
            model: { provider: model.provider, name: model.name },
            profile: dto.profile,
            workerType: dto.workerType,
          },
        },
      ],
      [
        {
          type: 'run.started',
          orgId,
          actor: actorOf(principal),
          target: { type: 'run', id },
          data: { agentId: built.agentId, version: built.version, model: { provider: model.provider, name: model.name } },
        },
      ],
      maxRunning,
    );
    this.worker.start(id, orgId);
    if (waitSeconds > 0) return this.waitWhileRunning(orgId, id, Math.min(waitSeconds, MAX_WAIT_SECONDS) * 1000);
    return (await this.repo.viewText(orgId, id))!;
  }

  /** The run as JSON text (RunView), made by the database (RunsRepository.viewText), as create and cancel answer it. */
  async get(ctx: RequestContext, id: string): Promise<string> {
    const orgId = orgOf(ctx);
    const text = await this.runReads.run(orgId, () => this.repo.viewText(orgId, id, agentScopeOf(ctx.principal)));
    return text ?? Promise.reject(ApiError.notFound('run'));
  }

  /** A page of runs as JSON text (RunPage), made by the database (RunsRepository.pageText). */
  list(ctx: RequestContext, query: ListRunsQuery): Promise<string> {
    const orgId = orgOf(ctx);
    return this.runReads.run(orgId, () => this.repo.pageText(orgId, { ...query, agents: agentScopeOf(ctx.principal) }));
  }

  /**
   * Cancels a run that has not finished; a finished one is answered as it is. Its pending
   * approvals are rejected, naming the run (a call that would run for nobody must not run).
   */
  async cancel(ctx: RequestContext, id: string): Promise<string> {
    const principal = keyOf(ctx);
    // Three columns, not the row: a finished run of 9.5 MB took 375 to 643 ms a cancel (attack round 16, S-F4).
    const row = await this.repo.summary(principal.orgId, id, principal.agentIds);
    if (!row) throw ApiError.notFound('run');
    if (!FINISHED.has(row.status)) {
      const run = { id, agentId: row.agent_id };
      const end = { cause: 'run_cancelled' as const, actor: actorOf(principal), keyId: principal.id };
      let decided: string[] = [];
      const cancelled = await this.repo.cancel(
        principal.orgId,
        id,
        [{ type: 'run.cancelled', data: { by: principal.id } }],
        [
          {
            type: 'run.cancelled',
            orgId: principal.orgId,
            actor: actorOf(principal),
            target: { type: 'run', id },
            data: { agentId: row.agent_id, version: row.version },
          },
        ],
        async (m) => {
          decided = await this.cancelledApprovals.reject(principal.orgId, run, end, m);
        },
      );
      this.signals.notify(id);
      // Stepped here: stopped now, so a model call in flight is aborted, not retried, and no further
      // tool call is asked for. Another node stepping it stops when the cancel's commit wakes it (a
      // moment), or at its next lease renewal if that wake-up is lost; meanwhile the executor refuses
      // its calls (the run has ended) and writes none that waits for approval.
      if (cancelled) this.worker.stopLocally(id);
      if (cancelled) this.cancelledApprovals.notify(id, decided);
    }
    return (await this.repo.viewText(principal.orgId, id))!;
  }

  /** 404 for another organization's run; the caller streams from here. Its status alone: the row holds the transcript (tens of MB). */
  async assertVisible(ctx: RequestContext, id: string): Promise<string> {
    const orgId = orgOf(ctx);
    if (!(await this.repo.status(orgId, id, agentScopeOf(ctx.principal)))) throw ApiError.notFound('run');
    return orgId;
  }

  /**
   * The run's events after `afterSeq`, as they are written, until the run finishes (and its last
   * events are delivered), `signal` aborts, or `keyId` (the reader's API key) is found revoked:
   * judged with each read, so nothing written after its revocation is sent. Each batch is handed
   * to `send` in order.
   */
  async stream(
    orgId: string,
    id: string,
    afterSeq: string,
    send: (events: RunEventRow[]) => void,
    keepAlive: () => void,
    clientGone: AbortSignal,
    keyId?: string,
  ): Promise<void> {
    const abort = new AbortController();
    const stop = () => abort.abort();
    clientGone.addEventListener('abort', stop, { once: true });
    this.streams.add(abort);
    try {
      await this.streamUntil(orgId, id, afterSeq, send, keepAlive, abort.signal, keyId);
    } finally {
      this.streams.delete(abort);
      clientGone.removeEventListener('abort', stop);
    }
  }

  onModuleDestroy(): void {
    this.streams.forEach((s) => s.abort());
  }

  private async streamUntil(
    orgId: string,
    id: string,
    afterSeq: string,
    send: (events: RunEventRow[]) => void,
    keepAlive: () => void,
    signal: AbortSignal,
    keyId: string | undefined,
  ): Promise<void> {
    let last = afterSeq;
    while (!signal.aborted) {
      const { events: batch, keyRevoked } = await this.once(`e:${orgId}:${id}:${last}:${keyId ?? ''}`, () => this.repo.events(orgId, id, last, keyId), orgId);
      if (keyRevoked) return;
      if (batch.length > 0) {
        send(batch);
        last = batch[batch.length - 1].seq;
        continue;
      }
      // Nothing after `last`: the run's head (its status, its last event; the row holds megabytes) until there is.
      if ((await this.heads.news(orgId, id, last, keepAlive, signal)) !== 'finished') continue;
      // Read after the status, never a read of another stream begun before it: that one may not see the last events.
      const tail = await this.eventReads.run(orgId, () => this.repo.events(orgId, id, last, keyId), signal);
      if (tail.keyRevoked || tail.events.length === 0) return;
    }
  }

  /**
   * `read()`, or the same read begun in this turn of the event loop (its result is only read). Not
   * one begun earlier: a stream woken by a write must not be handed a read that may predate it.
   * With `gateOf`, the read waits for one of the organization's turns, and while it waits (not
   * begun, so it cannot predate anything) every stream asking the same joins it.
   */
  private once<T>(key: string, read: () => Promise<T>, gateOf?: string): Promise<T> {
    const begun = this.reads.get(key) as Promise<T> | undefined;
    if (begun) return begun;
    const p =
      gateOf === undefined
        ? read()
        : this.eventReads.run(gateOf, () => {
            forget();
            return read();
          });
    const forget = () => setImmediate(() => this.reads.get(key) === p && this.reads.delete(key));
    this.reads.set(key, p);
    if (gateOf === undefined) forget();
    return p;
  }

  private async waitWhileRunning(orgId: string, id: string, ms: number): Promise<string> {
    const deadline = Date.now() + ms;
    for (;;) {
      // The whole row (its transcript) only once, to answer: each poll reads the status alone.
      const status = (await this.heads.of(orgId, id))?.status;
      const left = deadline - Date.now();
      if (status !== 'running' || left <= 0) return (await this.repo.viewText(orgId, id))!;
      await this.signals.wait(id, Math.min(CROSS_NODE_POLL_MS, left));
    }
  }
}

/**
 * Who may start or cancel a run: an API key. A run acts for the key that started it and is
 * re-authorized through that key on every step, for as long as it waits for approvals (a day);
 * a person's token expires long before, and would leave the run nothing to be authorized by. A
 * cancel is recorded as the canceller's rejection of each pending approval, which the node stepping
 * the run may have to write later from the run's record, where the canceller is an API key's id
 * (src/auth/oidc/README.md).
 */
function keyOf(ctx: RequestContext): ApiKeyPrincipal {
  if (ctx.principal.type !== 'api_key') {
    throw ApiError.forbidden('Starting and cancelling runs take an API key of the organization (with the agent or builder role); reading them does not.');
  }
  return ctx.principal;
}

/** Reading runs follows roles alone, for a key or a signed-in person alike (the route's @Access). */
function orgOf(ctx: RequestContext): string {
  if (!isOrgPrincipal(ctx.principal)) throw ApiError.forbidden('Runs belong to an organization.');
  return ctx.principal.orgId;
}
