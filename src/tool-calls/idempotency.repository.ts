import { Injectable } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { ApiError } from '../common/api-error';
import type { Statement } from '../database/statement';

/** Keys are kept this long, per organization and agent (API.md): the same key for another agent is another key. */
export const IDEMPOTENCY_TTL_HOURS = 24;

export interface IdempotencyClaim {
  orgId: string;
  agentId: string;
  key: string;
  claimId: string;
}

export type ClaimResult = { kind: 'claimed'; claim: IdempotencyClaim } | { kind: 'replay'; status: number; body: unknown };

interface KeyRow {
  request_hash: string;
  claim_id: string;
  status: 'in_progress' | 'done';
  response_status: number | null;
  response_body: unknown;
  /** In progress past its lock: the request holding it died before it recorded anything. */
  stale: boolean;
  expired: boolean;
}

/** Finishing a claim in the statement that records the call. */
export interface ClaimCompletion {
  orgId: string;
  agentId: string;
  key: string;
  claimId: string;
  status: number;
  body: unknown;
}

/**
 * The owner of `idempotency_key`: `Idempotency-Key` for tool calls. The claim is one INSERT ... ON CONFLICT DO NOTHING, so among
 * any number of simultaneous requests with one key exactly one proceeds; the answer is stored in
 * the same statement that records the call (see ToolCallsRepository), so a replay can never
 * disagree with what was recorded.
 *
 * A request that is refused before anything is recorded (a guard, a validation error) releases
 * its key: nothing happened, so a corrected retry with the same key may proceed.
 */
@Injectable()
export class IdempotencyRepository {
  constructor(private readonly dataSource: DataSource) {}

  async claim(orgId: string, agentId: string, key: string, requestHash: string, lockMs: number): Promise<ClaimResult> {
    for (let attempt = 0; attempt < 5; attempt++) {
      const claimId = randomUUID();
      const inserted: unknown[] = await this.dataSource.query(
        `INSERT INTO idempotency_key (org_id, key, request_hash, claim_id, status, locked_until, expires_at, agent_id)
         VALUES ($1, $2, $3, $4, 'in_progress', now() + make_interval(secs => $5::double precision / 1000), now() + make_interval(hours => $6), $7)
         ON CONFLICT (org_id, agent_id, key) DO NOTHING
         RETURNING claim_id`,
        [orgId, key, requestHash, claimId, lockMs, IDEMPOTENCY_TTL_HOURS, agentId],
      );
      if (inserted.length > 0) return { kind: 'claimed', claim: { orgId, agentId, key, claimId } };

      const rows: KeyRow[] = await this.dataSource.query(
        `SELECT request_hash, claim_id, status, response_status, response_body,
                status = 'in_progress' AND locked_until <= now() AS stale, expires_at <= now() AS expired
           FROM idempotency_key WHERE org_id = $1 AND key = $2 AND agent_id = $3`,
        [orgId, key, agentId],
      );
      const row = rows[0];
      if (!row) continue; // released or swept in between: try to claim again
      if (!row.expired) {
        if (row.request_hash !== requestHash) {
          throw new ApiError('idempotency_key_reused', 'This Idempotency-Key was used with a different request body.');
        }
        if (row.status === 'done') return { kind: 'replay', status: row.response_status!, body: row.response_body };
        if (!row.stale) {
          throw new ApiError('idempotency_in_progress', 'The first request with this Idempotency-Key has not finished; retry later.', undefined, undefined, {
            'Retry-After': '1',
          });
        }
      }
      // An expired key, or a claim whose holder died: take it over, if nobody else just did.
      const [taken]: [unknown[], number] = await this.dataSource.query(
        `UPDATE idempotency_key SET request_hash = $3, claim_id = $4, status = 'in_progress', tool_call_id = NULL, response_status = NULL,
                response_body = NULL, locked_until = now() + make_interval(secs => $5::double precision / 1000),
                created_at = now(), expires_at = now() + make_interval(hours => $6)
          WHERE org_id = $1 AND key = $2 AND claim_id = $7 AND agent_id = $8
            AND (expires_at <= now() OR (status = 'in_progress' AND locked_until <= now()))
          RETURNING claim_id`,
        [orgId, key, requestHash, claimId, lockMs, IDEMPOTENCY_TTL_HOURS, row.claim_id, agentId],
      );
      if (taken.length > 0) return { kind: 'claimed', claim: { orgId, agentId, key, claimId } };
    }
    throw new ApiError('idempotency_in_progress', 'This Idempotency-Key is contended; retry later.', undefined, undefined, { 'Retry-After': '1' });
  }

  /** Gives the key back when the request was refused before anything was recorded. */
  async release(claim: IdempotencyClaim): Promise<void> {
    await this.dataSource.query(`DELETE FROM idempotency_key WHERE org_id = $1 AND agent_id = $2 AND key = $3 AND claim_id = $4 AND status = 'in_progress'`, [
      claim.orgId,
      claim.agentId,
      claim.key,
      claim.claimId,
    ]);
  }

  /** Keys past their 24 hours, a batch at a time (the sweeper). */
  async deleteExpired(batch = 1000): Promise<number> {
    const [, count]: [unknown[], number] = await this.dataSource.query(
      `DELETE FROM idempotency_key WHERE (org_id, agent_id, key) IN (SELECT org_id, agent_id, key FROM idempotency_key WHERE expires_at <= now() LIMIT $1)`,
      [batch],
    );
    return count;
  }
}

/** The claim's row while it is still this request's, for the statement that records a call to lock first (ToolCallsRepository). */
export function heldClaimSql(s: Statement, claim: ClaimCompletion | IdempotencyClaim): string {
  return `SELECT 1 FROM idempotency_key WHERE org_id = ${s.param(claim.orgId)} AND agent_id = ${s.param(claim.agentId)}::uuid
             AND key = ${s.param(claim.key)} AND claim_id = ${s.param(claim.claimId)} AND status = 'in_progress'`;
}

/** A request whose claim lapsed while it was under way, and was taken over by a later one with the key: it records nothing. */
export function claimTakenOver(): ApiError {
  return new ApiError(
    'idempotency_in_progress',
    'A later request with this Idempotency-Key took it over while this one was under way (past TOOL_TIMEOUT_MS and TOOL_LEASE_GRACE_SECONDS); nothing was recorded. Retry to read its answer.',
    undefined,
    undefined,
    { 'Retry-After': '1' },
  );
}

/** The part of the statement that records a call which stores the answer of its claim (ToolCallsRepository). */
export function completeClaimSql(s: Statement, claim: ClaimCompletion, callId: string): string {
  return `UPDATE idempotency_key SET status = 'done', tool_call_id = ${s.param(callId)}, response_status = ${s.param(claim.status)},
            response_body = ${s.param(JSON.stringify(claim.body))}::jsonb
           WHERE org_id = ${s.param(claim.orgId)} AND agent_id = ${s.param(claim.agentId)}::uuid AND key = ${s.param(claim.key)} AND claim_id = ${s.param(claim.claimId)}`;
}
