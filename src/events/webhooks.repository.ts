import { Injectable, LoggerService } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { AuditEventInput, AuditService } from '../audit/audit.service';
import { Page, PageQuery } from '../common/pagination';
import { shownUrl } from '../common/url-secrets';
import { newestFirstPage } from '../database/keyset-page';
import { countingTransaction, countUnderOrgLock, holdActingKey } from '../database/org-limit';
import { sealStoredUrls } from '../database/seal-stored-urls';
import { pendingCountedUpTo } from './webhook-backlog';

export type DeliveryStatus = 'pending' | 'succeeded' | 'failed';

export interface WebhookEndpoint {
  id: string;
  /** As answers show it: its query values and token-shaped path segments `[redacted]` (src/common/url-secrets.ts). */
  url: string;
  types: string[];
  description: string | null;
  createdAt: string;
  /** When its signing secret was last replaced; null: never since it was created. */
  secretRotatedAt: string | null;
  backlog: WebhookBacklog;
}

/** The endpoint against WEBHOOK_MAX_PENDING_PER_ENDPOINT (src/events/webhook-backlog.service.ts). */
export interface WebhookBacklog {
  /** Its pending deliveries, counted up to twice the cap at most PENDING_REUSE_MS before the answer (src/events/recent-counts.ts). */
  pending: number;
  maxPending: number;
  /** Since when its new events are not written as deliveries; null while they are. */
  droppingSince: string | null;
  /** Of the latest such time (counted by the sweep, so up to an interval late): how many, the first's and the last's `at`. */
  dropped: number;
  firstDroppedAt: string | null;
  lastDroppedAt: string | null;
}

export interface RotatedSecret {
  id: string;
  /** Until when deliveries are also signed with the secret replaced; null: they are not. */
  previousSecretExpiresAt: string | null;
  /** This rotation's time: what the next rotation may name as `ifSecretRotatedAt`. */
  secretRotatedAt: string;
}

export interface DeliveryAttempt {
  attempt: number;
  startedAt: string;
  finishedAt: string | null;
  status: number | null;
  error: string | null;
}

export interface WebhookDelivery {
  id: string;
  eventId: string;
  type: string;
  status: DeliveryStatus;
  attempts: number;
  lastStatus: number | null;
  lastError: string | null;
  nextAttemptAt: string | null;
  createdAt: string;
  completedAt: string | null;
  history: DeliveryAttempt[];
}

interface EndpointRow {
  id: string;
  url: string;
  types: string[];
  description: string | null;
  created_at: Date;
  secret_rotated_at: Date | null;
  backlogged_at: Date | null;
  dropped: string;
  dropped_first_at: Date | null;
  dropped_last_at: Date | null;
}

/** An endpoint's columns as answers show them; its pending deliveries are counted apart (pendingCounts). */
const ENDPOINT_COLUMNS = `id, url, types, description, created_at, secret_rotated_at, backlogged_at, dropped, dropped_first_at, dropped_last_at`;

interface DeliveryRow {
  id: string;
  event_id: string;
  type: string;
  status: DeliveryStatus;
  attempts: number;
  last_status: number | null;
  last_error: string | null;
  next_attempt_at: Date;
  created_at: Date;
  completed_at: Date | null;
  history: { attempt: number; started_at: string; finished_at: string | null; response_status: number | null; error: string | null }[];
}

const iso = (d: Date | string | null): string | null => (d === null ? null : new Date(d).toISOString());

/** Endpoints and the delivery log; every read and write takes the organization first (the dispatcher's statements: WebhookDeliveriesRepository). */
@Injectable()
export class WebhooksRepository {
  constructor(
    private readonly dataSource: DataSource,
    private readonly audit: AuditService,
  ) {}

  /** Creates the endpoint unless the organization already has `limit` live ones (undefined then). */
  async create(
    orgId: string,
    endpoint: { id: string; url: string; urlSealed: string | null; types: string[]; description: string | null; secretSealed: string },
    event: AuditEventInput,
    limit: number,
    maxPending: number,
    /** The API key creating it (holdActingKey), if a key does. */
    actingKey?: string,
  ): Promise<WebhookEndpoint | undefined> {
    return countingTransaction(this.dataSource, 'webhook_endpoint', orgId, async (m) => {
      const live = await countUnderOrgLock(m, 'webhook_endpoint', orgId, 'deleted_at IS NULL');
      await holdActingKey(m, orgId, actingKey);
      if (live >= limit) return undefined;
      const rows: EndpointRow[] = await m.query(
        `INSERT INTO webhook_endpoint (id, org_id, url, url_sealed, types, description, secret_sealed) VALUES ($1, $2, $3, $4, $5, $6, $7)
         RETURNING ${ENDPOINT_COLUMNS}`,
        [endpoint.id, orgId, endpoint.url, endpoint.urlSealed, endpoint.types, endpoint.description, endpoint.secretSealed],
      );
      await this.audit.record(m, event);
      return toEndpoint(rows[0], maxPending);
    });
  }

  /**
   * `maxPending`: WEBHOOK_MAX_PENDING_PER_ENDPOINT, which the endpoint's backlog is shown against;
   * `backlog.pending` is 0 here, counted by pendingCounts.
   */
  async find(orgId: string, id: string, maxPending: number): Promise<WebhookEndpoint | undefined> {
    const rows: EndpointRow[] = await this.dataSource.query(
      `SELECT ${ENDPOINT_COLUMNS} FROM webhook_endpoint WHERE org_id = $1 AND id = $2 AND deleted_at IS NULL`,
      [orgId, id],
    );
    return rows[0] && toEndpoint(rows[0], maxPending);
  }

  /** The live endpoint's URL as answers show it, without counting its backlog; undefined when there is none. */
  async urlOf(orgId: string, id: string): Promise<string | undefined> {
    const rows: { url: string }[] = await this.dataSource.query(`SELECT url FROM webhook_endpoint WHERE org_id = $1 AND id = $2 AND deleted_at IS NULL`, [
      orgId,
      id,
    ]);
    return rows[0] && shownUrl(rows[0].url);
  }

  /** As find, a page of them. */
  list(orgId: string, query: PageQuery, maxPending: number): Promise<Page<WebhookEndpoint>> {
    return newestFirstPage(
      this.dataSource,
      {
        select: `SELECT ${ENDPOINT_COLUMNS} FROM webhook_endpoint`,
        where: 'org_id = $1 AND deleted_at IS NULL',
        params: [orgId],
      },
      query,
      (r: EndpointRow) => toEndpoint(r, maxPending),
    );
  }

  /** The pending deliveries of each of the organization's endpoints `ids`, each counted up to twice `maxPending` (0 for an id it has none of). */
  async pendingCounts(orgId: string, ids: readonly string[], maxPending: number): Promise<Map<string, number>> {
    const rows: { id: string; pending: number }[] = await this.dataSource.query(
      `SELECT e.id, (SELECT count(*)::integer FROM (SELECT 1 FROM webhook_delivery d
                      WHERE d.org_id = $1 AND d.endpoint_id = e.id AND d.status = 'pending' LIMIT $3) p) AS pending
         FROM unnest($2::uuid[]) AS e(id)`,
      [orgId, ids, pendingCountedUpTo(maxPending)],
    );
    return new Map(rows.map((r) => [r.id, Number(r.pending)]));
  }

  /**
   * Gives the endpoint a new signing secret, keeping the current one as the previous for
   * `keepSeconds` (none at 0; a previous one still kept is dropped: one at a time), with the event
   * `event` builds from the outcome, in one transaction. `ifRotatedAt` (when given): only if the
   * secret was last replaced at that millisecond (null: never), else `{ rotatedSince }` with when it
   * was. Undefined when there is no such live endpoint.
   */
  async rotateSecret(
    orgId: string,
    id: string,
    secretSealed: string,
    keepSeconds: number,
    ifRotatedAt: Date | null | undefined,
    event: (rotated: RotatedSecret & { url: string }) => AuditEventInput,
    /** The API key rotating it (holdActingKey once the row is held): a secret handed to a key revoked meanwhile signs for its holder. */
    actingKey?: string,
  ): Promise<RotatedSecret | { rotatedSince: string | null } | undefined> {
    return this.dataSource.transaction(async (m) => {
      // The right-hand secret_sealed is the row's value before this UPDATE; the expiry is the
      // database's clock, which the dispatcher's claim compares it with. A rotation committed
      // meanwhile is waited for and the condition read again on its row (READ COMMITTED).
      const [rows]: [{ id: string; url: string; previous_secret_expires_at: Date | null; secret_rotated_at: Date }[], number] = await m.query(
        `UPDATE webhook_endpoint SET
           previous_secret_sealed = CASE WHEN $4::integer > 0 THEN secret_sealed END,
           previous_secret_expires_at = CASE WHEN $4::integer > 0 THEN now() + $4::integer * interval '1 second' END,
           secret_sealed = $3,
           secret_rotated_at = now()
         WHERE org_id = $1 AND id = $2 AND deleted_at IS NULL
           AND (NOT $5::boolean OR date_trunc('milliseconds', secret_rotated_at) IS NOT DISTINCT FROM $6::timestamptz)
         RETURNING id, url, previous_secret_expires_at, secret_rotated_at`,
        [orgId, id, secretSealed, keepSeconds, ifRotatedAt !== undefined, ifRotatedAt ?? null],
      );
      if (!rows[0]) {
        if (ifRotatedAt === undefined) return undefined;
        const [now]: { secret_rotated_at: Date | null }[] = await m.query(
          `SELECT secret_rotated_at FROM webhook_endpoint WHERE org_id = $1 AND id = $2 AND deleted_at IS NULL`,
          [orgId, id],
        );
        return now && { rotatedSince: iso(now.secret_rotated_at) };
      }
      await holdActingKey(m, orgId, actingKey);
      const rotated: RotatedSecret = {
        id: rows[0].id,
        previousSecretExpiresAt: iso(rows[0].previous_secret_expires_at),
        secretRotatedAt: iso(rows[0].secret_rotated_at)!,
      };
      await this.audit.record(m, event({ ...rotated, url: shownUrl(rows[0].url) }));
      return rotated;
    });
  }

  /** Seals the URLs of endpoints saved whole before URLs holding a token were sealed (at start). */
  sealStoredUrls(seal: (url: string) => string, logger: Pick<LoggerService, 'log' | 'warn'>): Promise<void> {
    return sealStoredUrls(this.dataSource, 'webhook_endpoint', seal, logger);
  }

  /** False when there is no such live endpoint. Its pending deliveries end `failed`: nobody is listening any more. */
  async delete(orgId: string, id: string, event: AuditEventInput, actingKey?: string): Promise<boolean> {
    return this.dataSource.transaction(async (m) => {
      const rows: unknown[] = await m.query(
        `UPDATE webhook_endpoint SET deleted_at = now() WHERE org_id = $1 AND id = $2 AND deleted_at IS NULL RETURNING id`,
        [orgId, id],
      );
      if (rows.length === 0) return false;
      await holdActingKey(m, orgId, actingKey);
      await m.query(
        `UPDATE webhook_delivery SET status = 'failed', last_error = 'endpoint deleted', completed_at = now()
          WHERE org_id = $1 AND endpoint_id = $2 AND status = 'pending'`,
        [orgId, id],
      );
      await this.audit.record(m, event);
      return true;
    });
  }

  deliveries(orgId: string, endpointId: string, query: PageQuery & { status?: DeliveryStatus }): Promise<Page<WebhookDelivery>> {
    const params: unknown[] = [orgId, endpointId];
    let where = 'd.org_id = $1 AND d.endpoint_id = $2';
    if (query.status) {
      params.push(query.status);
      where += ` AND d.status = $${params.length}`;
    }
    return newestFirstPage(
      this.dataSource,
      {
        select: `SELECT d.id, d.status, d.attempts, d.last_status, d.last_error, d.next_attempt_at, d.created_at, d.completed_at,
                        e.id AS event_id, e.type,
                        COALESCE((SELECT json_agg(json_build_object('attempt', a.attempt, 'started_at', a.started_at, 'finished_at', a.finished_at,
                                                                    'response_status', a.response_status, 'error', a.error) ORDER BY a.attempt)
                                    FROM webhook_attempt a WHERE a.delivery_id = d.id AND a.org_id = d.org_id), '[]') AS history
                   FROM webhook_delivery d JOIN audit_event e ON e.seq = d.event_seq AND e.org_id = d.org_id`,
        where,
        params,
        alias: 'd',
      },
      query,
      toDelivery,
    );
  }
}

/** A row saved before its URL was sealed (sealed at the next start) shows as new ones do. */
function toEndpoint(r: EndpointRow, maxPending: number): WebhookEndpoint {
  return {
    id: r.id,
    url: shownUrl(r.url),
    types: r.types,
    description: r.description,
    createdAt: iso(r.created_at)!,
    secretRotatedAt: iso(r.secret_rotated_at),
    backlog: {
      pending: 0,
      maxPending,
      droppingSince: iso(r.backlogged_at),
      dropped: Number(r.dropped),
      firstDroppedAt: iso(r.dropped_first_at),
      lastDroppedAt: iso(r.dropped_last_at),
    },
  };
}

function toDelivery(r: DeliveryRow): WebhookDelivery {
  return {
    id: r.id,
    eventId: r.event_id,
    type: r.type,
    status: r.status,
    attempts: r.attempts,
    lastStatus: r.last_status,
    lastError: r.last_error,
    nextAttemptAt: r.status === 'pending' ? iso(r.next_attempt_at) : null,
    createdAt: iso(r.created_at)!,
    completedAt: iso(r.completed_at),
    history: r.history.map((a) => ({
      attempt: a.attempt,
      startedAt: iso(a.started_at)!,
      finishedAt: iso(a.finished_at),
      status: a.response_status,
      error: a.error,
    })),
  };
}
