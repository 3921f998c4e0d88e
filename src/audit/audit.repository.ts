import { Injectable } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { DataSource, EntityManager } from 'typeorm';
import { normalizeInstant } from '../common/instant';
import { decodeCursor, DEFAULT_LIMIT, invalidCursor, Page, pageOf } from '../common/pagination';
import { shownUrl } from '../common/url-secrets';
import { rowsWithinBudget } from '../database/keyset-page';
import { PositionSeal, PositionSeals } from '../secrets/position-seals';
import type { AuditEvent, AuditEventInput, AuditEventType } from './audit.service';

/** A row of `audit_event` as stored; every reader (the list here, the event stream in src/events) maps it with `toAuditEvent`. */
export interface AuditRow {
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

export interface AuditListQuery {
  type?: string;
  since?: string;
  until?: string;
  limit?: number;
  cursor?: string;
}

/** Events in one INSERT: 8 parameters each, well under the protocol's 65,535. */
export const AUDIT_EVENTS_PER_STATEMENT = 4096;

/**
 * The owner of `audit_event`'s SQL: the insert (on its own, or as part of a caller's statement
 * through `auditInsert`) and the newest-first list. The stream's reads (by transaction position)
 * are the event log's (src/events/event-log.repository.ts), over this row type.
 */
@Injectable()
export class AuditRepository {
  constructor(
    private readonly dataSource: DataSource,
    private readonly seals: PositionSeals,
  ) {}

  /**
   * Writes the events with the caller's manager, so they commit (or not) with its change. A
   * statement takes at most 65,535 parameters (the protocol counts them in 16 bits) and an event
   * takes 8: a key revoked with 8,300 runs unfinished wrote one event a run in one statement, which
   * failed and rolled the revocation back, every time. Larger sets go in several statements.
   */
  async insert(manager: EntityManager, events: AuditEventInput[]): Promise<void> {
    for (let start = 0; start < events.length; start += AUDIT_EVENTS_PER_STATEMENT) {
      const { sql, params } = auditInsert(events.slice(start, start + AUDIT_EVENTS_PER_STATEMENT), 1);
      await manager.query(sql, params);
    }
  }

  /**
   * Newest first by `at`, then `seq`, through (org_id[, type], at DESC, seq DESC): `since` and
   * `until` are bounds of the index scan. Ordered by `seq` alone, a window that matched little
   * (`since` an hour from now) walked the organization's whole log, filtering: 1.5 s at 2,000,000
   * events, and any admin could repeat it. The page's upper end is one row bound, the lower of the
   * cursor's row and `(until, 0)`: given as two conditions, the scan started at one of them and
   * could walk from there to the other (a cursor of another query with an old `until`: 310 ms).
   */
  /**
   * Removes up to `batch` of the oldest events (by sequence, every organization's) written more than
   * `days` ago; how many. The table lets only this transaction's retention through (migration
   * 1765000000101), and nodes sweeping at once skip each other's rows.
   */
  async deleteOlderThan(days: number, batch: number): Promise<number> {
    return this.dataSource.transaction(async (manager) => {
      await manager.query(`SELECT set_config('audit.retention_days', $1, true)`, [String(days)]);
      const [, count]: [unknown[], number] = await manager.query(
        `DELETE FROM audit_event WHERE seq IN (SELECT seq FROM audit_event ORDER BY seq LIMIT $2 FOR UPDATE SKIP LOCKED)
            AND at < now() - make_interval(days => $1)`,
        [days, batch],
      );
      return count;
    });
  }

  async list(orgId: string, query: AuditListQuery): Promise<Page<AuditEvent>> {
    const limit = query.limit ?? DEFAULT_LIMIT;
    // The sequence is every organization's: the cursor carries it sealed under this one's key, so
    // the gap between two pages' cursors does not count what the others wrote in between.
    const seal = this.seals.audit(orgId);
    const after = openedCursor(seal, query.cursor);
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
    const ends: string[] = [];
    if (after) {
      params.push(after);
      ends.push(`SELECT c.at, c.seq FROM audit_event c WHERE c.seq = $${params.length} AND c.org_id = $1`);
    }
    if (query.until) {
      params.push(normalizeInstant(query.until));
      // seq starts at 1: (until, 0) is below every event at `until`, so the bound is exclusive.
      ends.push(`SELECT $${params.length}::timestamptz, 0::bigint`);
    }
    if (ends.length > 0) where.push(`(at, seq) < (SELECT e.at, e.seq FROM (${ends.join(' UNION ALL ')}) e(at, seq) ORDER BY e.at, e.seq LIMIT 1)`);
    params.push(limit + 1);
    // An event's data is mostly ids, but a server's tool list (mcp_connection.synced) is as long as the server makes it.
    const { rows, found } = await rowsWithinBudget<AuditRow>(this.dataSource, {
      text: `SELECT * FROM audit_event WHERE ${where.join(' AND ')} ORDER BY at DESC, seq DESC LIMIT $${params.length}`,
      params,
      order: 'at DESC, seq DESC',
      bytes: ['w.data_bytes'],
    });
    return pageOf(rows, limit, (r) => [seal.seal(BigInt(r.seq), 0n)], toAuditEvent, undefined, found);
  }
}

/** The sequence a cursor of `GET /audit-events` seals, or 400 at `cursor` as for any list's cursor. */
function openedCursor(seal: PositionSeal, cursor: string | undefined): string | undefined {
  const token = decodeCursor(cursor, ['text'])?.[0] as string | undefined;
  if (token === undefined) return undefined;
  const pair = seal.open(token);
  if (!pair || pair[1] !== 0n || pair[0] > BIGINT_MAX) throw invalidCursor();
  return pair[0].toString();
}

const BIGINT_MAX = 9223372036854775807n;

/**
 * The INSERT of `events` with its parameters numbered from `firstParam`. For a hot path that writes
 * its change and its audit events in ONE statement (a data-modifying CTE), which is still "with the
 * change it records": a statement is atomic.
 */
export function auditInsert(events: AuditEventInput[], firstParam: number): { sql: string; params: unknown[] } {
  const params: unknown[] = [];
  const rows = events.map((e, i) => {
    params.push(randomUUID(), e.orgId, e.type, e.actor.type, e.actor.id, e.target.type, e.target.id, JSON.stringify(shownData(e.type, e.data ?? {})));
    const b = firstParam + i * 8;
    return `($${b}, $${b + 1}, $${b + 2}, $${b + 3}, $${b + 4}, $${b + 5}, $${b + 6}, $${b + 7}::jsonb)`;
  });
  return {
    sql: `INSERT INTO audit_event (id, org_id, type, actor_type, actor_id, target_type, target_id, data) VALUES ${rows.join(', ')}`,
    params,
  };
}

export function toAuditEvent(r: Omit<AuditRow, 'seq'>): AuditEvent {
  return {
    id: r.id,
    at: new Date(r.at).toISOString(),
    type: r.type,
    actor: { type: r.actor_type, id: r.actor_id },
    orgId: r.org_id,
    target: { type: r.target_type, id: r.target_id },
    data: shownData(r.type, r.data),
  };
}

/** The field of an event's data that holds a URL an admin saved, by type. */
const SAVED_URLS: Partial<Record<AuditEventType, readonly string[]>> = {
  'mcp_connection.created': ['url'],
  'mcp_connection.url_updated': ['url', 'previousUrl'],
  'model_provider.created': ['baseUrl'],
  'webhook.created': ['url'],
  'webhook.secret_rotated': ['url'],
  'webhook.deleted': ['url'],
  'webhook.backlogged': ['url'],
  'webhook.backlog_cleared': ['url'],
};

/**
 * The data with its saved URLs as answers show them (query values and token-shaped path segments
 * `[redacted]`). Events are written so, whatever their writer passed; this also shows those written
 * before, with a token in the query or the path, the same way to every reader (the audit list, the event stream, webhook
 * deliveries) without changing the append-only log.
 */
function shownData(type: AuditEventType, data: Record<string, unknown>): Record<string, unknown> {
  const fields = SAVED_URLS[type];
  if (fields === undefined || data === null || typeof data !== 'object') return data;
  let shown = data;
  for (const field of fields) if (typeof data[field] === 'string') shown = { ...shown, [field]: shownUrl(data[field]) };
  return shown;
}

/**
 * Like `auditInsert`, as a part of a data-modifying statement whose events are written only when
 * `condition` holds (an SQL boolean over the statement's other parts: `EXISTS (SELECT 1 FROM w0)`,
 * "the conditional UPDATE matched"), so a decision and its events stay one statement.
 */
export function auditInsertWhen(events: AuditEventInput[], firstParam: number, condition: string): { sql: string; params: unknown[] } {
  const params: unknown[] = [];
  const rows = events.map((e, i) => {
    params.push(randomUUID(), e.orgId, e.type, e.actor.type, e.actor.id, e.target.type, e.target.id, JSON.stringify(shownData(e.type, e.data ?? {})));
    const b = firstParam + i * 8;
    return `($${b}::uuid, $${b + 1}::uuid, $${b + 2}::text, $${b + 3}::text, $${b + 4}::text, $${b + 5}::text, $${b + 6}::text, $${b + 7}::jsonb)`;
  });
  return {
    sql: `INSERT INTO audit_event (id, org_id, type, actor_type, actor_id, target_type, target_id, data)
          SELECT * FROM (VALUES ${rows.join(', ')}) AS e(id, org_id, type, actor_type, actor_id, target_type, target_id, data) WHERE ${condition}`,
    params,
  };
}
