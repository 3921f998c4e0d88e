import { Injectable, LoggerService } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { AuditRow, toAuditEvent } from '../audit/audit.repository';
import { AuditEvent, AuditEventInput, AuditService } from '../audit/audit.service';
import { Page, PageQuery } from '../common/pagination';
import { shownUrl } from '../common/url-secrets';
import { newestFirstPage } from '../database/keyset-page';
import { countUnderOrgLock } from '../database/org-limit';
import { sealStoredUrls } from '../database/seal-stored-urls';

export type DeliveryStatus = 'pending' | 'succeeded' | 'failed';

export interface WebhookEndpoint {
  id: string;
  /** As answers show it: its query values `[redacted]` (src/common/url-secrets.ts). */
  url: string;
  types: string[];
  description: string | null;
  createdAt: string;
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

/** A delivery claimed for one attempt: everything needed to make it without the database. */
export interface ClaimedDelivery {
  id: string;
  /** The organization of the endpoint. */
  orgId: string;
  endpointId: string;
  attempt: number;
  /** Where to POST: the URL as saved, to be opened when `sealed` (it holds a token). */
  url: { shown: string; sealed: string | null };
  secretSealed: string;
  createdAt: Date;
  event: AuditEvent;
}

export type AttemptOutcome =
  | { kind: 'succeeded'; status: number }
  | { kind: 'retry'; status: number | null; error: string | null; at: Date }
  | { kind: 'failed'; status: number | null; error: string | null };

interface EndpointRow {
  id: string;
  url: string;
  types: string[];
  description: string | null;
  created_at: Date;
}

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

/** Endpoints, deliveries and attempts; every read and write takes the organization first. */
/** The attempts each organization has in flight on this node, and how many one may have. */
export interface OrgSlots {
  taken: ReadonlyMap<string, number>;
  max: number;
}

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
  ): Promise<WebhookEndpoint | undefined> {
    return this.dataSource.transaction(async (m) => {
      if ((await countUnderOrgLock(m, 'webhook_endpoint', orgId, 'deleted_at IS NULL')) >= limit) return undefined;
      const rows: EndpointRow[] = await m.query(
        `INSERT INTO webhook_endpoint (id, org_id, url, url_sealed, types, description, secret_sealed) VALUES ($1, $2, $3, $4, $5, $6, $7)
         RETURNING id, url, types, description, created_at`,
        [endpoint.id, orgId, endpoint.url, endpoint.urlSealed, endpoint.types, endpoint.description, endpoint.secretSealed],
      );
      await this.audit.record(m, event);
      return toEndpoint(rows[0]);
    });
  }

  async find(orgId: string, id: string): Promise<WebhookEndpoint | undefined> {
    const rows: EndpointRow[] = await this.dataSource.query(
      `SELECT id, url, types, description, created_at FROM webhook_endpoint WHERE org_id = $1 AND id = $2 AND deleted_at IS NULL`,
      [orgId, id],
    );
    return rows[0] && toEndpoint(rows[0]);
  }

  list(orgId: string, query: PageQuery): Promise<Page<WebhookEndpoint>> {
    return newestFirstPage(
      this.dataSource,
      { select: 'SELECT id, url, types, description, created_at FROM webhook_endpoint', where: 'org_id = $1 AND deleted_at IS NULL', params: [orgId] },
      query,
      toEndpoint,
    );
  }

  /** Seals the URLs of endpoints saved whole before URLs holding a token were sealed (at start). */
  sealStoredUrls(seal: (url: string) => string, logger: Pick<LoggerService, 'log' | 'warn'>): Promise<void> {
    return sealStoredUrls(this.dataSource, 'webhook_endpoint', seal, logger);
  }

  /** False when there is no such live endpoint. Its pending deliveries end `failed`: nobody is listening any more. */
  async delete(orgId: string, id: string, event: AuditEventInput): Promise<boolean> {
    return this.dataSource.transaction(async (m) => {
      const rows: unknown[] = await m.query(
        `UPDATE webhook_endpoint SET deleted_at = now() WHERE org_id = $1 AND id = $2 AND deleted_at IS NULL RETURNING id`,
        [orgId, id],
      );
      if (rows.length === 0) return false;
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

  /**
   * Claims due deliveries for one attempt each, at most one per endpoint per call, none of the
   * endpoints in `busy`, and no more of one organization than its free slots in `orgs` (the
   * oldest of each first), so one tenant's receivers cannot take every slot. One statement: the attempt number goes up, the attempt's row is
   * written (its key makes attempt n happen once), and the delivery is leased by moving its
   * next attempt past the attempt's timeout, so a node that dies mid-attempt leaves a delivery
   * that another node tries again (as the next attempt) once the lease has run out.
   */
  async claim(limit: number, busy: string[], leaseMs: number, orgs: OrgSlots): Promise<ClaimedDelivery[]> {
    const rows: (Omit<AuditRow, 'seq' | 'id'> & {
      id: string;
      owner_org_id: string;
      endpoint_id: string;
      attempts: number;
      url: string;
      url_sealed: string | null;
      secret_sealed: string;
      created_at: Date;
      event_id: string;
    })[] = await this.dataSource.query(
      `WITH taken AS (
         SELECT * FROM unnest($4::uuid[], $5::integer[]) AS t(org_id, n)
       ), due AS (
         SELECT id FROM (
           SELECT first.id, first.next_attempt_at,
                  row_number() OVER (PARTITION BY first.org_id ORDER BY first.next_attempt_at, first.id) + COALESCE(taken.n, 0) AS nth_org
             FROM (
               SELECT id, org_id, next_attempt_at, row_number() OVER (PARTITION BY endpoint_id ORDER BY next_attempt_at, id) AS nth
                 FROM (SELECT id, org_id, endpoint_id, next_attempt_at FROM webhook_delivery
                        WHERE status = 'pending' AND next_attempt_at <= now() AND NOT (endpoint_id = ANY ($2::uuid[]))
                          AND NOT (org_id = ANY ($7::uuid[]))
                        ORDER BY next_attempt_at LIMIT 1000) oldest
             ) first LEFT JOIN taken ON taken.org_id = first.org_id
            WHERE first.nth = 1
         ) ranked
         WHERE nth_org <= $6 ORDER BY next_attempt_at LIMIT $1
       ), locked AS (
         SELECT d.id FROM webhook_delivery d JOIN due ON due.id = d.id
          WHERE d.status = 'pending' AND d.next_attempt_at <= now()
          FOR UPDATE OF d SKIP LOCKED
       ), claimed AS (
         UPDATE webhook_delivery d SET attempts = d.attempts + 1, next_attempt_at = now() + $3 * interval '1 millisecond'
           FROM locked WHERE d.id = locked.id
         RETURNING d.id, d.org_id, d.endpoint_id, d.event_seq, d.attempts, d.created_at
       ), logged AS (
         INSERT INTO webhook_attempt (delivery_id, attempt, org_id, started_at) SELECT id, attempts, org_id, now() FROM claimed
       )
       SELECT c.id, c.org_id AS owner_org_id, c.endpoint_id, c.attempts, c.created_at, w.url, w.url_sealed, w.secret_sealed,
              e.id AS event_id, e.at, e.type, e.actor_type, e.actor_id, e.org_id, e.target_type, e.target_id, e.data
         FROM claimed c
         JOIN webhook_endpoint w ON w.id = c.endpoint_id AND w.org_id = c.org_id
         JOIN audit_event e ON e.seq = c.event_seq AND e.org_id = c.org_id`,
      [limit, busy, leaseMs, [...orgs.taken.keys()], [...orgs.taken.values()], orgs.max, [...orgs.taken].filter(([, n]) => n >= orgs.max).map(([id]) => id)],
    );
    return rows.map((r) => ({
      id: r.id,
      orgId: r.owner_org_id,
      endpointId: r.endpoint_id,
      attempt: r.attempts,
      url: { shown: r.url, sealed: r.url_sealed },
      secretSealed: r.secret_sealed,
      createdAt: new Date(r.created_at),
      // The event as the audit log shows it (an endpoint's URL in it with its query values hidden).
      event: toAuditEvent({ ...r, id: r.event_id }),
    }));
  }

  /** When the next pending delivery comes due, if any. */
  async nextDue(): Promise<Date | undefined> {
    const rows: { at: Date | null }[] = await this.dataSource.query(`SELECT min(next_attempt_at) AS at FROM webhook_delivery WHERE status = 'pending'`);
    return rows[0]?.at ? new Date(rows[0].at) : undefined;
  }

  /**
   * Records how attempt `attempt` ended. Only while it is still the delivery's latest attempt:
   * an attempt that outlived its lease (another node has made the next one) changes nothing
   * but its own row.
   */
  async finish(deliveryId: string, attempt: number, outcome: AttemptOutcome): Promise<void> {
    const status = outcome.kind === 'succeeded' ? outcome.status : outcome.status;
    const error = outcome.kind === 'succeeded' ? null : outcome.error;
    await this.dataSource.query(
      `WITH logged AS (
         UPDATE webhook_attempt SET finished_at = now(), response_status = $3, error = $4
          WHERE delivery_id = $1 AND attempt = $2
       )
       UPDATE webhook_delivery SET
         status = $5, last_status = $3, last_error = $4,
         next_attempt_at = COALESCE($6::timestamptz, next_attempt_at),
         completed_at = CASE WHEN $5 = 'pending' THEN NULL ELSE now() END
        WHERE id = $1 AND attempts = $2 AND status = 'pending'`,
      [deliveryId, attempt, status, error, outcome.kind === 'retry' ? 'pending' : outcome.kind, outcome.kind === 'retry' ? outcome.at : null],
    );
  }
}

/** A row saved before its URL was sealed (sealed at the next start) shows as new ones do. */
function toEndpoint(r: EndpointRow): WebhookEndpoint {
  return { id: r.id, url: shownUrl(r.url), types: r.types, description: r.description, createdAt: iso(r.created_at)! };
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
