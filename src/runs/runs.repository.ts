// Longer than 300 lines because it is the one place a run's row and events change, each change
// guarded by the lease (or the revocation's transaction) the same way, and reads best together.
import { Injectable } from '@nestjs/common';
import { DataSource, EntityManager } from 'typeorm';
import { AuditEventInput, AuditService } from '../audit/audit.service';
import { liveKeySql } from '../auth/api-keys.repository';
import { PageQuery } from '../common/pagination';
import { newestFirstPage } from '../database/keyset-page';
import { countingTransaction, holdOrgCountLock } from '../database/org-limit';
import { tooManyRunning } from './running-runs';
import { Metrics } from '../telemetry/metrics';
import type { ChatMessage, CompactionState } from './conversation';

/** Run events written by one INSERT: 2 parameters each, far under PostgreSQL's 65,535 per statement. */
export const EVENTS_PER_STATEMENT = 1000;

export type RunStatus = 'running' | 'waiting_for_approval' | 'succeeded' | 'failed' | 'cancelled';
export const FINISHED: ReadonlySet<RunStatus> = new Set(['succeeded', 'failed', 'cancelled']);

/** A tool call the model asked for in its last answer, until its result is in the conversation. */
export interface PendingCall {
  /** The model's id for the call. */
  id: string;
  name: string;
  arguments: string;
  /** The model call (1-based) that asked for it: with the run and the id, the key of its one tool call. */
  step: number;
  toolCallId?: string;
  approvalId?: string;
  /** The tool message, once the call is decided and settled (or refused). */
  result?: Extract<ChatMessage, { role: 'tool' }>;
}

export interface RunUsage {
  modelCalls: number;
  inputTokens: number;
  outputTokens: number;
  toolCalls: number;
  /** Calls of the run's model the guards refused (RUN_MAX_REFUSED_CALLS); the run's own, not answered (RUN_VIEW leaves it out). */
  refusedCalls?: number;
}

export interface RunRow {
  id: string;
  org_id: string;
  agent_id: string;
  version: number;
  profile: string | null;
  worker_type: string | null;
  status: RunStatus;
  input: string;
  messages: ChatMessage[];
  pending: PendingCall[];
  compaction: CompactionState | null;
  output: string | null;
  tool_call_ids: string[];
  pending_approval_ids: string[];
  usage: RunUsage;
  error_code: string | null;
  error_message: string | null;
  requested_by: string;
  /** Counts its tool calls settled (a trigger on tool_call): a step compares it to tell a decision it did not see. */
  wakes: number;
  /** The model's failed attempts in a row, each retried after the run gave its slot back (0 once a step is written). */
  model_attempts: number;
  created_at: Date;
  updated_at: Date;
  completed_at: Date | null;
}

export interface NewRun {
  id: string;
  orgId: string;
  agentId: string;
  version: number;
  profile: string | null;
  workerType: string | null;
  input: string;
  messages: ChatMessage[];
  requestedBy: string;
}

/** What one step changes about a run; unset fields stay as they are. */
export interface RunPatch {
  status?: RunStatus;
  messages?: ChatMessage[];
  pending?: PendingCall[];
  compaction?: CompactionState | null;
  output?: string | null;
  toolCallIds?: string[];
  pendingToolCallIds?: string[];
  pendingApprovalIds?: string[];
  usage?: RunUsage;
  error?: { code: string; message: string } | null;
  /** Give the lease back (a pause, or the end). */
  release?: boolean;
  /** Not to be claimed before this (a retry later). */
  notBefore?: Date | null;
}

/** How a run ends when the API key that started it is revoked (the engine's words too, when it finds out at a step). */
export const KEY_REVOKED = { code: 'unauthorized', message: 'The API key that started the run was revoked.' } as const;
/** A step found the key no longer accepted: revoked (through another node, before its revocation's own ending of the run) or expired. */
export const KEY_NOT_ACCEPTED = { code: 'unauthorized', message: 'The API key that started the run was revoked, or expired.' } as const;

/** A run a change ended, as its audit event names it. */
export interface EndedRun {
  id: string;
  agent_id: string;
  version: number;
  usage: RunUsage;
}

/** A pending approval of a run's own call, locked by `failRunsOfKey` for its caller to reject. */
export interface LockedRunApproval {
  id: string;
  toolCallId: string;
}

/** What a key's revocation ended: its runs, and their approvals still pending (locked). */
export interface KeyRunsEnded {
  runs: EndedRun[];
  approvals: LockedRunApproval[];
}

/**
 * What a run of a list weighs, as the database writes it: its conversation can hold up to
 * MAX_TRANSCRIPT_CHARS, and a page of runs ends at the byte budget (rowsWithinBudget). Each id in
 * the arrays is 39 bytes of JSON.
 */
const RUN_WEIGHT = [
  'octet_length(input)',
  'messages_bytes',
  'pending_bytes',
  'compaction_bytes',
  'octet_length(output)',
  'octet_length(error_message)',
  '39 * (cardinality(tool_call_ids) + cardinality(pending_tool_call_ids) + cardinality(pending_approval_ids))',
]
  .map((term) => `coalesce(${term}, 0)`)
  .join(' + ');

const iso = (column: string) => `to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;
const optional = (key: string, value: string, when: string) => `CASE WHEN ${when} THEN jsonb_build_object('${key}', ${value}) ELSE '{}'::jsonb END`;
/** A run row as `GET /runs/{id}` answers it (toRunView's fields), JSON text written by the database. */
/** `$3`: the agents a pinned key may read of (agentScopeOf), or null for every agent. */
const OF_AGENTS = 'AND ($3::uuid[] IS NULL OR agent_id = ANY ($3::uuid[]))';

const RUN_VIEW = `(jsonb_build_object('id', id, 'agentId', agent_id, 'version', version, 'status', status, 'input', input, 'messages', messages,
                 'toolCallIds', to_jsonb(tool_call_ids), 'pendingApprovalIds', to_jsonb(pending_approval_ids), 'usage', usage - 'refusedCalls',
                 'createdAt', ${iso('created_at')})
               || ${optional('output', 'output', 'output IS NOT NULL')}
               || ${optional('error', `jsonb_build_object('code', error_code, 'message', coalesce(error_message, ''))`, `coalesce(error_code, '') <> ''`)}
               || ${optional('profile', 'profile', 'profile IS NOT NULL')}
               || ${optional('workerType', 'worker_type', 'worker_type IS NOT NULL')}
               || ${optional('completedAt', iso('completed_at'), 'completed_at IS NOT NULL')})::text`;

export interface RunEventInput {
  type: string;
  data: Record<string, unknown>;
}

export interface RunEventRow {
  seq: string;
  type: string;
  data: Record<string, unknown>;
  at: Date;
}

/**
 * A run that needs a node (`r`): a node died holding it, a retry is due, or its approvals are decided.
 * A waiting run is looked at only once one of its calls settled (the trigger of migration
 * 1764522600000 clears its `not_before`) or its last approval expires (`not_before`, set when it
 * paused): one organization's thousands of runs waiting for approval cost the polls of every node
 * nothing, where each poll probed each of them (quadratic in that organization's tool calls: 8.8 s
 * at 21,800 waiting runs, every other organization's resumed runs waiting behind it). Its calls are
 * probed by primary key.
 */
const CLAIMABLE = `((r.status = 'running' AND (r.lease_expires_at IS NULL OR r.lease_expires_at <= now()))
    OR (r.status = 'waiting_for_approval' AND (r.lease_expires_at IS NULL OR r.lease_expires_at <= now())
        AND NOT EXISTS (
          SELECT 1 FROM unnest(r.pending_tool_call_ids) AS p(id) JOIN tool_call c ON c.id = p.id
           WHERE c.org_id = r.org_id
             AND (c.status = 'running' OR (c.status = 'pending_approval' AND c.approval_expires_at > now())))))
  AND (r.not_before IS NULL OR r.not_before <= now())`;

/** The runs each organization has stepping on this node, and how many one may have. */
export interface RunSlots {
  taken: ReadonlyMap<string, number>;
  max: number;
  /**
   * How many of the runs claimed may be of organizations stepping some here already, counting
   * each newcomer's first as one of them (run-slots.ts's sharedLeft); the rest of `limit` goes only
   * to a first run each of organizations stepping none (RUN_RESERVED_FOR_NEW_ORGS). Unset: no such bound.
   */
  shared?: number;
}

export interface ClaimedRun {
  id: string;
  orgId: string;
}

/**
 * Every statement about runs. A step's write is conditional on the lease (`lease_owner`): a node
 * whose lease expired and was taken over writes nothing, so two nodes never both advance a run.
 */

/** About the most bytes of run events read for one stream at once (a batch always holds one event). */
export const EVENT_BATCH_BYTES = 1024 * 1024;

@Injectable()
export class RunsRepository {
  constructor(
    readonly dataSource: DataSource,
    private readonly audit: AuditService,
    private readonly metrics: Metrics,
  ) {}

  /**
   * Writes a new run; with `maxRunning`, `429` and nothing written when the organization already has
   * that many `running` (RUN_MAX_RUNNING_PER_ORG), counted under its lock for runs in its turn on this
   * node: counted apart, 200 runs asked for at once all saw room, and 157 were started past a bound
   * of 5 (attack round 22, AF-F1).
   */
  async insert(run: NewRun, owner: string, leaseMs: number, events: RunEventInput[], audit: AuditEventInput[], maxRunning?: number): Promise<void> {
    const write = async (m: EntityManager): Promise<void> => {
      if (maxRunning !== undefined) {
        await holdOrgCountLock(m, 'run', run.orgId);
        if ((await this.countRunning(run.orgId, maxRunning, m)) >= maxRunning) throw tooManyRunning(maxRunning);
      }
      await m.query(
        `INSERT INTO run (id, org_id, agent_id, version, profile, worker_type, status, input, messages, requested_by, lease_owner, lease_expires_at)
         VALUES ($1, $2, $3, $4, $5, $6, 'running', $7, $8::jsonb, $9, $10, now() + make_interval(secs => $11::double precision / 1000))`,
        [run.id, run.orgId, run.agentId, run.version, run.profile, run.workerType, run.input, JSON.stringify(run.messages), run.requestedBy, owner, leaseMs],
      );
      await this.insertEvents(m, run.orgId, run.id, events);
      await this.audit.record(m, ...audit);
    };
    await (maxRunning === undefined ? this.dataSource.transaction(write) : countingTransaction(this.dataSource, 'run', run.orgId, write));
    this.metrics.runStatus('running');
  }

  async find(orgId: string, id: string): Promise<RunRow | undefined> {
    const rows: RunRow[] = await this.dataSource.query(`SELECT * FROM run WHERE org_id = $1 AND id = $2`, [orgId, id]);
    return rows[0];
  }

  /**
   * The run as `GET /runs/{id}` answers it (toRunView's fields), JSON made by the database: a run
   * holds up to 8,000,000 characters of JSON, which parsed from the row and written again took the
   * node's event loop 160 ms a read, and one viewer key's 8 reads at once made another
   * organization's requests wait 1.1 s (attack round 13, K-F6). undefined for another organization's.
   */
  async viewText(orgId: string, id: string, agents?: readonly string[]): Promise<string | undefined> {
    const rows: { body: string }[] = await this.dataSource.query(`SELECT ${RUN_VIEW} AS body FROM run WHERE org_id = $1 AND id = $2 ${OF_AGENTS}`, [
      orgId,
      id,
      agents ?? null,
    ]);
    return rows[0]?.body;
  }

  /** The organization's runs `running` now, counted up to `upTo` (RUN_MAX_RUNNING_PER_ORG; index run_running_org). */
  async countRunning(orgId: string, upTo: number, m: Pick<EntityManager, 'query'> = this.dataSource): Promise<number> {
    const [row]: { n: number }[] = await m.query(`SELECT count(*)::int AS n FROM (SELECT 1 FROM run WHERE org_id = $1 AND status = 'running' LIMIT $2) r`, [
      orgId,
      upTo,
    ]);
    return row.n;
  }

  /** Only the status: what a waiting request or an event stream polls (the row holds the whole transcript). */
  /** What a cancel reads of a run: its row holds the transcript (up to 8,000,000 characters), parsed on the node for three columns (S-F4). */
  async summary(orgId: string, id: string, agents?: readonly string[]): Promise<Pick<RunRow, 'status' | 'agent_id' | 'version'> | undefined> {
    const rows: Pick<RunRow, 'status' | 'agent_id' | 'version'>[] = await this.dataSource.query(
      `SELECT status, agent_id, version FROM run WHERE org_id = $1 AND id = $2 ${OF_AGENTS}`,
      [orgId, id, agents ?? null],
    );
    return rows[0];
  }

  async status(orgId: string, id: string, agents?: readonly string[]): Promise<RunStatus | undefined> {
    const rows: { status: RunStatus }[] = await this.dataSource.query(`SELECT status FROM run WHERE org_id = $1 AND id = $2 ${OF_AGENTS}`, [
      orgId,
      id,
      agents ?? null,
    ]);
    return rows[0]?.status;
  }

  /** The status and last event's sequence of each of the organization's runs named (RunHeads); none for another's. */
  async heads(orgId: string, ids: string[]): Promise<Map<string, { status: RunStatus; lastSeq: string | null }>> {
    const rows: { id: string; status: RunStatus; last_seq: string | null }[] = await this.dataSource.query(
      `SELECT r.id, r.status, (SELECT max(e.seq)::text FROM run_event e WHERE e.run_id = r.id) AS last_seq
         FROM run r WHERE r.org_id = $1 AND r.id = ANY ($2::uuid[])`,
      [orgId, ids],
    );
    return new Map(rows.map((r) => [r.id, { status: r.status, lastSeq: r.last_seq }]));
  }

  /** For the node that holds the lease: the run whatever its organization (the lease says it is ours). */
  async findLeased(id: string, owner: string): Promise<RunRow | undefined> {
    const rows: RunRow[] = await this.dataSource.query(`SELECT * FROM run WHERE id = $1 AND lease_owner = $2`, [id, owner]);
    return rows[0];
  }

  /**
   * A page of runs as `GET /runs` answers it, JSON text written by the database as viewText's:
   * parsed from their rows and written again, a page (up to the byte budget, 4 MB) held the node's
   * event loop as a large run's read did (attack round 13, K-F6). The page is chosen by the runs'
   * weights first, and only its runs are written.
   */
  async pageText(orgId: string, q: { agentId?: string; agents?: readonly string[]; status?: RunStatus } & PageQuery): Promise<string> {
    const where = ['org_id = $1'];
    const params: unknown[] = [orgId];
    if (q.agentId) {
      params.push(q.agentId);
      where.push(`agent_id = $${params.length}`);
    }
    if (q.agents) {
      params.push(q.agents);
      where.push(`agent_id = ANY ($${params.length}::uuid[])`);
    }
    if (q.status) {
      params.push(q.status);
      where.push(`status = $${params.length}`);
    }
    const page = await newestFirstPage(
      this.dataSource,
      { select: `SELECT id, created_at, ${RUN_WEIGHT} AS weight FROM run`, where: where.join(' AND '), params, bytes: ['w.weight'] },
      q,
      (r: { id: string; created_at: string }) => r.id,
    );
    const rows: { id: string; body: string }[] = page.items.length
      ? await this.dataSource.query(`SELECT id, ${RUN_VIEW} AS body FROM run WHERE org_id = $1 AND id = ANY ($2::uuid[])`, [orgId, page.items])
      : [];
    const bodies = new Map(rows.map((r) => [r.id, r.body]));
    const items = page.items.flatMap((id) => bodies.get(id) ?? []);
    return `{"items":[${items.join(',')}],"nextCursor":${JSON.stringify(page.nextCursor)}}`;
  }

  /**
   * Claims runs that need a node: running ones nobody holds (their node died, or a retry is due),
   * and waiting ones whose every pending call is decided (on any node) or past its approval's expiry.
   * Organizations are served in turn: each one's runs are ranked oldest first, after the runs it
   * already has on this node (`orgs.taken`), and the lowest ranks are taken first, none past
   * `orgs.max`. So a run of an organization with nothing here starts before the next of one with
   * hundreds queued, where a single queue oldest first made it wait behind all of them. Those first
   * runs (rank 1) come before every other, so the `orgs.shared` bound only drops runs of
   * organizations that would already step one here: past it, the slots left are the reserve.
   */
  async claim(owner: string, leaseMs: number, limit: number, orgs: RunSlots): Promise<ClaimedRun[]> {
    // An UPDATE answers [rows, count] through TypeORM's pg driver.
    const [rows]: [{ id: string; org_id: string }[], number] = await this.dataSource.query(
      `WITH taken AS (
         SELECT * FROM unnest($4::uuid[], $5::integer[]) AS t(org_id, n)
       ), ranked AS (
         SELECT r.id, r.updated_at, row_number() OVER (PARTITION BY r.org_id ORDER BY r.updated_at, r.id) + COALESCE(t.n, 0) AS nth
           FROM run r LEFT JOIN taken t ON t.org_id = r.org_id
          WHERE ${CLAIMABLE}
            AND COALESCE(t.n, 0) < $6
       ), ordered AS (
         SELECT id, nth, row_number() OVER (ORDER BY nth, updated_at, id) AS pos
           FROM (SELECT id, nth, updated_at FROM ranked WHERE nth <= $6 ORDER BY nth, updated_at, id LIMIT $3) first
       ), picked AS (
         SELECT id FROM ordered WHERE nth = 1 OR pos <= $7
       ), locked AS (
         SELECT r.id FROM run r JOIN picked p ON p.id = r.id WHERE ${CLAIMABLE} FOR UPDATE OF r SKIP LOCKED
       )
       UPDATE run SET lease_owner = $1, lease_expires_at = now() + make_interval(secs => $2::double precision / 1000)
         FROM locked WHERE run.id = locked.id
       RETURNING run.id, run.org_id`,
      [owner, leaseMs, limit, [...orgs.taken.keys()], [...orgs.taken.values()], orgs.max, orgs.shared ?? limit],
    );
    return rows.map((r) => ({ id: r.id, orgId: r.org_id }));
  }

  /** Keeps the lease while a step runs; false when another node has it now. */
  async renew(id: string, owner: string, leaseMs: number): Promise<boolean> {
    const [rows]: [unknown[], number] = await this.dataSource.query(
      `UPDATE run SET lease_expires_at = now() + make_interval(secs => $3::double precision / 1000)
        WHERE id = $1 AND lease_owner = $2 AND status IN ('running', 'waiting_for_approval') RETURNING id`,
      [id, owner, leaseMs],
    );
    return rows.length > 0;
  }

  /** Of these runs, the ones whose lease `owner` still holds (what `renew` would renew), read only. */
  async held(ids: readonly string[], owner: string): Promise<Set<string>> {
    const rows: { id: string }[] = await this.dataSource.query(
      `SELECT id FROM run WHERE id = ANY($1::uuid[]) AND lease_owner = $2 AND status IN ('running', 'waiting_for_approval')`,
      [ids, owner],
    );
    return new Set(rows.map((r) => r.id));
  }

  /** Writes a step; false (and nothing written) when the lease is no longer ours or the run was cancelled. */
  async save(
    row: Pick<RunRow, 'id' | 'org_id'> & Partial<Pick<RunRow, 'wakes'>>,
    owner: string,
    patch: RunPatch,
    events: RunEventInput[],
    audit: AuditEventInput[] = [],
  ): Promise<boolean> {
    // A step that writes went forward: the counts of failures in a row start again.
    const sets: string[] = ['updated_at = now()', 'step_failures = 0', 'model_attempts = 0'];
    const params: unknown[] = [row.id, owner];
    const set = (column: string, value: unknown, cast = '') => {
      params.push(value);
      sets.push(`${column} = $${params.length}${cast}`);
    };
    if (patch.status !== undefined) set('status', patch.status);
    if (patch.messages !== undefined) set('messages', JSON.stringify(patch.messages), '::jsonb');
    if (patch.pending !== undefined) set('pending', JSON.stringify(patch.pending), '::jsonb');
    if (patch.compaction !== undefined) set('compaction', patch.compaction === null ? null : JSON.stringify(patch.compaction), '::jsonb');
    if (patch.output !== undefined) set('output', patch.output);
    if (patch.toolCallIds !== undefined) set('tool_call_ids', patch.toolCallIds, '::uuid[]');
    if (patch.pendingToolCallIds !== undefined) set('pending_tool_call_ids', patch.pendingToolCallIds, '::uuid[]');
    if (patch.pendingApprovalIds !== undefined) set('pending_approval_ids', patch.pendingApprovalIds, '::uuid[]');
    if (patch.usage !== undefined) set('usage', JSON.stringify(patch.usage), '::jsonb');
    if (patch.error !== undefined) {
      set('error_code', patch.error?.code ?? null);
      set('error_message', patch.error?.message ?? null);
    }
    if (patch.status === 'waiting_for_approval' && row.wakes !== undefined) {
      // Paused: not looked at again until a call of it settles or its last approval expires. A
      // settlement since the step read the run (`wakes` moved: the trigger's increment, or the row as
      // it is once the trigger's transaction commits, if that one holds it) may not have been seen.
      params.push(row.wakes, row.org_id, patch.pendingToolCallIds ?? []);
      const [wakes, org, ids] = [params.length - 2, params.length - 1, params.length];
      sets.push(`not_before = CASE WHEN wakes <> $${wakes} THEN NULL ELSE (SELECT max(c.approval_expires_at) FROM tool_call c
        WHERE c.org_id = $${org} AND c.id = ANY($${ids}::uuid[]) AND c.status = 'pending_approval') END`);
    } else if (patch.notBefore !== undefined) set('not_before', patch.notBefore);
    if (patch.status && FINISHED.has(patch.status)) sets.push('completed_at = now()');
    if (patch.release) sets.push('lease_owner = NULL', 'lease_expires_at = NULL');
    const saved = await this.dataSource.transaction(async (m) => {
      const [updated]: [unknown[], number] = await m.query(
        `UPDATE run SET ${sets.join(', ')} WHERE id = $1 AND lease_owner = $2 AND status IN ('running', 'waiting_for_approval') RETURNING id`,
        params,
      );
      if (updated.length === 0) return false;
      await this.insertEvents(m, row.org_id, row.id, events);
      await this.audit.record(m, ...audit);
      return true;
    });
    // Counted once committed, by the node that wrote it: every node's counts add up to the runs' history.
    if (saved && patch.status !== undefined) this.metrics.runStatus(patch.status);
    return saved;
  }

  /** Counts a step that failed on an error of ours, keeping the lease; the failures in a row so far (0: no longer ours). */
  async countStepFailure(id: string, owner: string): Promise<number> {
    const [rows]: [{ step_failures: number }[], number] = await this.dataSource.query(
      `UPDATE run SET step_failures = step_failures + 1 WHERE id = $1 AND lease_owner = $2 RETURNING step_failures`,
      [id, owner],
    );
    return rows[0]?.step_failures ?? 0;
  }

  /**
   * Gives the lease back without changing anything else (a node shutting down, a step to retry), or
   * with the model's failed attempts so far when a model request is what waits.
   */
  async release(id: string, owner: string, notBefore?: Date, modelAttempts?: number): Promise<void> {
    await this.dataSource.query(
      `UPDATE run SET lease_owner = NULL, lease_expires_at = NULL, not_before = $3, model_attempts = COALESCE($4, model_attempts)
        WHERE id = $1 AND lease_owner = $2`,
      [id, owner, notBefore ?? null, modelAttempts ?? null],
    );
  }

  /**
   * Cancels a run that has not finished, whoever holds it: its holder's next write matches nothing.
   * `settle` runs in the same transaction once the run is cancelled (its approvals' rejections), so
   * an approver at the same moment either decides first or finds the approval rejected, never
   * approves a call of a run already cancelled.
   */
  async cancel(
    orgId: string,
    id: string,
    events: RunEventInput[],
    audit: AuditEventInput[],
    settle: (m: EntityManager) => Promise<void> = async () => undefined,
  ): Promise<boolean> {
    return this.dataSource
      .transaction(async (m) => {
        // The locks in a decision's order (approval, tool call, then the run), as failRunsOfKey takes them.
        await m.query(
          `SELECT a.id FROM approval a JOIN tool_call c ON c.org_id = a.org_id AND c.id = a.tool_call_id
            WHERE a.org_id = $1 AND a.status = 'pending' AND c.entry_point = 'run' AND c.run_id = $2::text
            ORDER BY a.id FOR UPDATE OF a`,
          [orgId, id],
        );
        const [updated]: [unknown[], number] = await m.query(
          `UPDATE run SET status = 'cancelled', completed_at = now(), updated_at = now(), lease_owner = NULL, lease_expires_at = NULL,
                pending_tool_call_ids = '{}', pending_approval_ids = '{}'
          WHERE org_id = $1 AND id = $2 AND status IN ('running', 'waiting_for_approval') RETURNING id`,
          [orgId, id],
        );
        if (updated.length === 0) return false;
        await this.insertEvents(m, orgId, id, events);
        await this.audit.record(m, ...audit);
        await settle(m);
        return true;
      })
      .then((cancelled) => {
        if (cancelled) this.metrics.runStatus('cancelled');
        return cancelled;
      });
  }

  /**
   * Adds to a run that ended (cancelled, or failed by its key's revocation) while one of its steps
   * was running tool calls the calls that step made: the step's own write no longer matches, yet the
   * calls ran under the run's id, and the run's record must count every one. A run not ended is
   * left to the node stepping it: one that takes it over replays the step's calls under the same
   * keys, and records them itself.
   */
  async recordCallsOfEndedRun(orgId: string, runId: string, callIds: readonly string[]): Promise<void> {
    await this.dataSource.transaction(async (m) => {
      const rows: { tool_call_ids: string[] }[] = await m.query(
        `SELECT tool_call_ids FROM run WHERE org_id = $1 AND id = $2 AND status IN ('succeeded', 'failed', 'cancelled') FOR UPDATE`,
        [orgId, runId],
      );
      if (!rows[0]) return;
      const known = new Set(rows[0].tool_call_ids);
      const missing = [...new Set(callIds)].filter((id) => !known.has(id));
      if (missing.length === 0) return;
      const ids = [...rows[0].tool_call_ids, ...missing];
      await m.query(
        `UPDATE run SET tool_call_ids = $3::uuid[], usage = jsonb_set(usage, '{toolCalls}', to_jsonb($4::int)), updated_at = now()
          WHERE org_id = $1 AND id = $2`,
        [orgId, runId, ids, ids.length],
      );
    });
  }

  /**
   * Why a run ended before its approvals were decided: cancelled (by that API key), or failed because
   * the key that started it was revoked. undefined when neither.
   */
  async endedEarly(orgId: string, runId: string): Promise<{ cause: 'run_cancelled'; by: string } | { cause: 'api_key_revoked'; keyId: string } | undefined> {
    const rows: { status: RunStatus; error_code: string | null; requested_by: string; by: string | null }[] = await this.dataSource.query(
      `SELECT r.status, r.error_code, r.requested_by,
              (SELECT e.data->>'by' FROM run_event e WHERE e.org_id = r.org_id AND e.run_id = r.id AND e.type = 'run.cancelled' LIMIT 1) AS by
         FROM run r WHERE r.org_id = $1 AND r.id = $2`,
      [orgId, runId],
    );
    const r = rows[0];
    if (r?.status === 'cancelled' && r.by) return { cause: 'run_cancelled', by: r.by };
    if (r?.status === 'failed' && r.error_code === KEY_REVOKED.code) return { cause: 'api_key_revoked', keyId: r.requested_by };
    return undefined;
  }

  /**
   * Fails, in the caller's transaction (the key's revocation), every run the key started that has
   * not finished, as the run would fail itself at its next step: a node stepping one loses it at its
   * next write. Answers those runs, and their pending approvals, locked, for the caller to reject.
   */
  async failRunsOfKey(m: EntityManager, orgId: string, keyId: string, audit: (run: EndedRun) => AuditEventInput): Promise<KeyRunsEnded> {
    // In statements whose number does not grow with the runs, and whose cost grows with them about
    // linearly, whatever the planner believes of the tables' sizes: the runs' ids are read first and
    // handed over as an array (a `run_id IN (SELECT …)` was planned as a loop over the approvals for
    // each run, 2.9 s at 1,000 runs, about the square of that at ten times as many).
    const active: { id: string }[] = await m.query(
      `SELECT id::text AS id FROM run WHERE org_id = $1 AND requested_by = $2 AND status IN ('running', 'waiting_for_approval')`,
      [orgId, keyId],
    );
    // The locks in a decision's order (approval, tool call, then the run, which the call's
    // settlement wakes): this change rejects these runs' pending approvals after failing the runs,
    // so a person deciding one of them meanwhile, holding its approval and waiting for its run,
    // would otherwise wait for this change while it waits for that approval.
    const approvals: LockedRunApproval[] = active.length
      ? await m.query(
          `SELECT a.id, a.tool_call_id AS "toolCallId" FROM approval a JOIN tool_call c ON c.org_id = a.org_id AND c.id = a.tool_call_id
            WHERE a.org_id = $1 AND a.status = 'pending' AND c.entry_point = 'run' AND c.run_id = ANY ($2::text[])
            ORDER BY a.id FOR UPDATE OF a`,
          [orgId, active.map((r) => r.id)],
        )
      : [];
    const [runs]: [EndedRun[], number] = await m.query(
      `UPDATE run SET status = 'failed', error_code = $3, error_message = $4, completed_at = now(), updated_at = now(),
              lease_owner = NULL, lease_expires_at = NULL, pending = '[]'::jsonb, pending_tool_call_ids = '{}', pending_approval_ids = '{}'
        WHERE org_id = $1 AND requested_by = $2 AND status IN ('running', 'waiting_for_approval')
        RETURNING id, agent_id, version, usage - 'refusedCalls' AS usage`,
      [orgId, keyId, KEY_REVOKED.code, KEY_REVOKED.message],
    );
    if (runs.length > 0) {
      await m.query(`INSERT INTO run_event (org_id, run_id, type, data) SELECT $1, unnest($2::uuid[]), 'run.failed', $3::jsonb`, [
        orgId,
        runs.map((r) => r.id),
        JSON.stringify({ error: KEY_REVOKED }),
      ]);
    }
    await this.audit.record(m, ...runs.map(audit));
    return { runs, approvals };
  }

  /**
   * In the order of seq the number (the output column `seq` is text: ordered by it, 1000 came
   * before 999), and at most about `maxBytes` of them, with at least one: a `model.completed`
   * event holds up to 2,000,000 characters, and 500 of them read at once for each of 200 streams
   * that read nothing took a node to 5 GB. Sizes are stored with each event (`data_bytes`). With `keyId`, the reader's API key: none when it is
   * revoked in the snapshot they are read with, and `keyRevoked` (one row, its event's columns
   * null, when there is no event).
   */
  async events(
    orgId: string,
    runId: string,
    afterSeq: string,
    keyId?: string,
    limit = 500,
    maxBytes = EVENT_BATCH_BYTES,
  ): Promise<{ events: RunEventRow[]; keyRevoked: boolean }> {
    const rows: (Omit<RunEventRow, 'seq'> & { seq: string | null; key_live: boolean })[] = await this.dataSource.query(
      `SELECT k.live AS key_live, e.seq::text AS seq, e.type, e.data, e.at
         FROM (SELECT ${keyId ? liveKeySql('$6') : 'true'} AS live) k
         LEFT JOIN LATERAL (
           SELECT seq, type, data, at FROM (
             SELECT seq, type, data, at, data_bytes, sum(data_bytes) OVER (ORDER BY run_event.seq) AS running
               FROM run_event WHERE org_id = $1 AND run_id = $2 AND seq > $3::bigint ORDER BY run_event.seq LIMIT $4
           ) w WHERE w.running - w.data_bytes < $5
         ) e ON k.live
        ORDER BY e.seq`,
      keyId ? [orgId, runId, afterSeq, limit, maxBytes, keyId] : [orgId, runId, afterSeq, limit, maxBytes],
    );
    if (!rows[0]?.key_live) return { events: [], keyRevoked: true };
    return { events: rows.flatMap(({ seq, type, data, at }) => (seq === null ? [] : [{ seq, type, data, at }])), keyRevoked: false };
  }

  private async insertEvents(m: EntityManager, orgId: string, runId: string, events: RunEventInput[]): Promise<void> {
    // A statement takes at most 65,535 parameters (the protocol counts them in 16 bits): a step with
    // more events than one statement can carry is written in several, in order, in the same transaction.
    for (let start = 0; start < events.length; start += EVENTS_PER_STATEMENT) {
      const values: string[] = [];
      const params: unknown[] = [orgId, runId];
      for (const e of events.slice(start, start + EVENTS_PER_STATEMENT)) {
        params.push(e.type, JSON.stringify(e.data));
        values.push(`($1, $2, $${params.length - 1}, $${params.length}::jsonb)`);
      }
      await m.query(`INSERT INTO run_event (org_id, run_id, type, data) VALUES ${values.join(', ')}`, params);
    }
  }
}
