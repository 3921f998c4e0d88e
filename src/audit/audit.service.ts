import { Injectable, OnModuleInit } from '@nestjs/common';
import { DataSource, EntityManager, EntitySubscriberInterface, TransactionCommitEvent, TransactionRollbackEvent } from 'typeorm';
import type { Page } from '../common/pagination';
import { AuditListQuery, AuditRepository } from './audit.repository';

// The statement builder lives with the table's SQL; callers that write events in their own statement import it from here.
export { auditInsert } from './audit.repository';

export const AUDIT_EVENT_TYPES = [
  'org.created',
  'org.scopes_updated',
  'api_key.created',
  'api_key.revoked',
  'api_key.expiring',
  'api_key.expired',
  'org.api_key_policy_updated',
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
  'model_provider.api_key_updated',
  'model_provider.deleted',
  'mcp_connection.created',
  'mcp_connection.synced',
  'mcp_connection.risk_set',
  'mcp_connection.credentials_updated',
  'mcp_connection.url_updated',
  'mcp_connection.deleted',
  'webhook.created',
  'webhook.secret_rotated',
  'webhook.deleted',
  'webhook.backlogged',
  'webhook.backlog_cleared',
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

  constructor(
    private readonly dataSource: DataSource,
    private readonly repo: AuditRepository,
  ) {}

  onModuleInit(): void {
    // Told of every commit of this data source, so `record` can wake readers once its events
    // are visible (not before: a reader woken early finds nothing and sleeps).
    this.dataSource.subscribers.push(this);
  }

  async record(manager: EntityManager, ...events: AuditEventInput[]): Promise<void> {
    if (events.length === 0) return;
    await this.repo.insert(manager, events);
    this.committedWith(manager, events);
  }

  /** `committed` once `manager`'s transaction commits, or at once outside one: events written with `auditInsert` through it. */
  committedWith(manager: Pick<EntityManager, 'queryRunner'>, events: readonly AuditEventInput[]): void {
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

  list(orgId: string, query: AuditListQuery): Promise<Page<AuditEvent>> {
    return this.repo.list(orgId, query);
  }
}
