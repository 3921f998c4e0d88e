import { Injectable, OnModuleInit } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { DataSource, EntityManager, EntitySubscriberInterface, TransactionCommitEvent, TransactionRollbackEvent } from 'typeorm';
import { normalizeInstant } from '../common/instant';
import { decodeCursor, DEFAULT_LIMIT, Page, pageOf } from '../common/pagination';

export const AUDIT_EVENT_TYPES = [
  'org.created',
  'org.scopes_updated',
  'api_key.created',
  'api_key.revoked',
  'agent.created',
  'agent.published',
  'tool_call.requested',
  'tool_call.denied',
  'tool_call.succeeded',
  'tool_call.failed',
  'approval.requested',
  'approval.approved',
  'approval.rejected',
  'approval.expired',
  'agent.version_retired',
  'tool.disabled',
  'tool.enabled',
  'run.started',
  'run.succeeded',
  'run.failed',
  'run.cancelled',
  'model_provider.created',
  'model_provider.deleted',
  'mcp_connection.created',
  'mcp_connection.synced',
  'mcp_connection.risk_set',
  'mcp_connection.credentials_updated',
  'mcp_connection.deleted',
  'webhook.created',
  'webhook.deleted',
] as const;
export type AuditEventType = (typeof AUDIT_EVENT_TYPES)[number];

export interface AuditEventInput {
  type: AuditEventType;
  orgId: string | null;
  actor: { type: string; id: string };
  target: { type: string; id: string };
  data?: Record<string, unknown>;
}

export interface AuditEvent {
  id: string;
  at: string;
  type: AuditEventType;
  actor: { type: string; id: string };
  orgId: string | null;
  target: { type: string; id: string };
  data: Record<string, unknown>;
}

interface AuditRow {
  seq: string;
  id: string;
  org_id: string | null;
  at: Date;
  type: AuditEventType;
  actor_type: string;
  actor_id: string;
  target_type: string;
  target_id: string;
  data: Record<string, unknown>;
}

/** Told, after a commit, which organizations have new events: a wake-up, never the events themselves. */
export type CommittedListener = (orgIds: ReadonlySet<string>) => void;

const PENDING_ORGS = 'auditPendingOrgs';

/**
 * The append-only log. `record` takes the caller's transaction manager: an event is written with
 * the change it describes or not at all. Every event is written through `record` or `auditInsert`
 * (a statement that also carries the change): the webhook outbox is filled by a trigger on the
 * table, and readers of the stream are woken after the commit (`committed`).
 */
@Injectable()
export class AuditService implements OnModuleInit, EntitySubscriberInterface {
  private readonly listeners: CommittedListener[] = [];

  constructor(private readonly dataSource: DataSource) {}

  onModuleInit(): void {
    // Told of every commit of this data source, so `record` can wake readers once its events
    // are visible (not before: a reader woken early finds nothing and sleeps).
    this.dataSource.subscribers.push(this);
  }

  async record(manager: EntityManager, ...events: AuditEventInput[]): Promise<void> {
    if (events.length === 0) return;
    const { sql, params } = auditInsert(events, 1);
    await manager.query(sql, params);
    const runner = manager.queryRunner;
    if (runner?.isTransactionActive) {
      const pending: Set<string> = (runner.data[PENDING_ORGS] ??= new Set<string>());
      for (const e of events) if (e.orgId) pending.add(e.orgId);
    } else {
      this.committed(events);
    }
  }

  /**
   * Wakes the readers of these events' organizations. `record` calls it after the commit; a
   * caller that wrote events with `auditInsert` in a statement of its own calls it once that
   * statement returned. Forgetting it costs latency (readers also poll), never an event.
   */
  committed(events: readonly AuditEventInput[]): void {
    const orgs = new Set<string>();
    for (const e of events) if (e.orgId) orgs.add(e.orgId);
    this.wake(orgs);
  }

  onCommitted(listener: CommittedListener): () => void {
    this.listeners.push(listener);
    return () => {
      const i = this.listeners.indexOf(listener);
      if (i >= 0) this.listeners.splice(i, 1);
    };
  }

  afterTransactionCommit(event: TransactionCommitEvent): void {
    const runner = event.queryRunner;
    // A released savepoint is not a commit: the outer transaction may still roll back.
    if (runner.isTransactionActive) return;
    const pending = runner.data?.[PENDING_ORGS] as Set<string> | undefined;
    if (!pending) return;
    delete runner.data[PENDING_ORGS];
    this.wake(pending);
  }

  afterTransactionRollback(event: TransactionRollbackEvent): void {
    if (!event.queryRunner.isTransactionActive && event.queryRunner.data) delete event.queryRunner.data[PENDING_ORGS];
  }

  private wake(orgs: ReadonlySet<string>): void {
    if (orgs.size === 0) return;
    for (const listener of this.listeners) {
      try {
        listener(orgs);
      } catch {
        // A listener's failure must not fail the request whose change is already committed.
      }
    }
  }

  async list(orgId: string, query: { type?: string; since?: string; limit?: number; cursor?: string }): Promise<Page<AuditEvent>> {
    const limit = query.limit ?? DEFAULT_LIMIT;
    const after = decodeCursor(query.cursor, ['bigint']);
    const where = ['org_id = $1'];
    const params: unknown[] = [orgId];
    if (query.type) {
      params.push(query.type);
      where.push(`type = $${params.length}`);
    }
    if (query.since) {
      params.push(normalizeInstant(query.since));
      where.push(`at >= $${params.length}::timestamptz`);
    }
    if (after) {
      params.push(String(after[0]));
      where.push(`seq < $${params.length}`);
    }
    params.push(limit + 1);
    const rows: AuditRow[] = await this.dataSource.query(
      `SELECT * FROM audit_event WHERE ${where.join(' AND ')} ORDER BY seq DESC LIMIT $${params.length}`,
      params,
    );
    return pageOf(rows, limit, (r) => [r.seq], toAuditEvent);
  }
}

/**
 * The INSERT of `events` with its parameters numbered from `firstParam`. For a hot path that writes
 * its change and its audit events in ONE statement (a data-modifying CTE), which is still "with the
 * change it records": a statement is atomic.
 */
export function auditInsert(events: AuditEventInput[], firstParam: number): { sql: string; params: unknown[] } {
  const params: unknown[] = [];
  const rows = events.map((e, i) => {
    params.push(randomUUID(), e.orgId, e.type, e.actor.type, e.actor.id, e.target.type, e.target.id, JSON.stringify(e.data ?? {}));
    const b = firstParam + i * 8;
    return `($${b}, $${b + 1}, $${b + 2}, $${b + 3}, $${b + 4}, $${b + 5}, $${b + 6}, $${b + 7}::jsonb)`;
  });
  return {
    sql: `INSERT INTO audit_event (id, org_id, type, actor_type, actor_id, target_type, target_id, data) VALUES ${rows.join(', ')}`,
    params,
  };
}

/**
 * Like `auditInsert`, as a part of a data-modifying statement whose events are written only when
 * `condition` holds (an SQL boolean over the statement's other parts: `EXISTS (SELECT 1 FROM w0)`,
 * "the conditional UPDATE matched"), so a decision and its events stay one statement.
 */
export function auditInsertWhen(events: AuditEventInput[], firstParam: number, condition: string): { sql: string; params: unknown[] } {
  const params: unknown[] = [];
  const rows = events.map((e, i) => {
    params.push(randomUUID(), e.orgId, e.type, e.actor.type, e.actor.id, e.target.type, e.target.id, JSON.stringify(e.data ?? {}));
    const b = firstParam + i * 8;
    return `($${b}::uuid, $${b + 1}::uuid, $${b + 2}::text, $${b + 3}::text, $${b + 4}::text, $${b + 5}::text, $${b + 6}::text, $${b + 7}::jsonb)`;
  });
  return {
    sql: `INSERT INTO audit_event (id, org_id, type, actor_type, actor_id, target_type, target_id, data)
          SELECT * FROM (VALUES ${rows.join(', ')}) AS e(id, org_id, type, actor_type, actor_id, target_type, target_id, data) WHERE ${condition}`,
    params,
  };
}

function toAuditEvent(r: AuditRow): AuditEvent {
  return {
    id: r.id,
    at: new Date(r.at).toISOString(),
    type: r.type,
    actor: { type: r.actor_type, id: r.actor_id },
    orgId: r.org_id,
    target: { type: r.target_type, id: r.target_id },
    data: r.data,
  };
}
