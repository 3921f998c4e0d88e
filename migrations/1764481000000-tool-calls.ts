import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Governed tool execution: tool calls, their approvals, the whole results kept for offloaded
 * calls, per-run call budgets and idempotency keys. Every row carries its organization; every
 * read filters on it, so the indexes lead with org_id.
 */
export class ToolCalls1764481000000 implements MigrationInterface {
  name = 'ToolCalls1764481000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE tool_call (
        id uuid PRIMARY KEY,
        org_id uuid NOT NULL REFERENCES org(id),
        agent_id uuid NOT NULL,
        version integer NOT NULL,
        tool text NOT NULL,
        capability_id text NOT NULL,
        tool_id text NOT NULL,
        run_id text,
        entry_point text NOT NULL CHECK (entry_point IN ('rest', 'mcp', 'run')),
        -- The validated arguments (defaults applied), and the SHA-256 of their canonical JSON.
        arguments jsonb NOT NULL,
        arguments_hash text NOT NULL,
        -- Set when an approver edited the arguments: what actually ran.
        executed_arguments jsonb,
        executed_arguments_hash text,
        status text NOT NULL CHECK (status IN ('pending_approval', 'running', 'succeeded', 'failed', 'rejected', 'expired')),
        result jsonb,
        result_truncated boolean NOT NULL DEFAULT false,
        result_tokens integer,
        result_offloaded boolean NOT NULL DEFAULT false,
        error_code text,
        error_message text,
        approval_id uuid,
        -- Copied from the approval so that status filters and reads need no join.
        approval_expires_at timestamptz,
        requested_by uuid NOT NULL,
        -- The requester has not yet been handed this call's decision (MCP re-asks; see the executor).
        awaiting_requester boolean NOT NULL DEFAULT false,
        -- While running: past this instant the process that runs it is presumed dead.
        lease_expires_at timestamptz,
        created_at timestamptz NOT NULL DEFAULT date_trunc('milliseconds', now()),
        started_at timestamptz,
        completed_at timestamptz,
        FOREIGN KEY (org_id, agent_id) REFERENCES agent (org_id, id),
        FOREIGN KEY (agent_id, version) REFERENCES agent_version (agent_id, version)
      )`);
    await q.query(`CREATE INDEX tool_call_org_idx ON tool_call (org_id, created_at DESC, id DESC)`);
    await q.query(`CREATE INDEX tool_call_org_agent_idx ON tool_call (org_id, agent_id, created_at DESC, id DESC)`);
    await q.query(`CREATE INDEX tool_call_org_status_idx ON tool_call (org_id, status, created_at DESC, id DESC)`);
    await q.query(`CREATE INDEX tool_call_org_run_idx ON tool_call (org_id, run_id, created_at DESC, id DESC) WHERE run_id IS NOT NULL`);
    // The sweeper's reads: small partial indexes, empty when nothing is in flight.
    await q.query(`CREATE INDEX tool_call_lease_idx ON tool_call (lease_expires_at) WHERE status = 'running'`);
    await q.query(`
      CREATE INDEX tool_call_awaiting_idx ON tool_call (org_id, agent_id, requested_by, arguments_hash)
       WHERE awaiting_requester`);

    await q.query(`
      CREATE TABLE approval (
        id uuid PRIMARY KEY,
        org_id uuid NOT NULL REFERENCES org(id),
        tool_call_id uuid NOT NULL UNIQUE REFERENCES tool_call(id),
        agent_id uuid NOT NULL,
        version integer NOT NULL,
        tool text NOT NULL,
        capability_id text NOT NULL,
        tool_id text NOT NULL,
        -- The approval binds to this hash of the validated arguments stored on the call.
        arguments_hash text NOT NULL,
        reason text NOT NULL CHECK (reason IN ('side_effecting', 'interrupt_before', 'spec_required')),
        status text NOT NULL CHECK (status IN ('pending', 'approved', 'rejected', 'expired')),
        requested_by uuid NOT NULL,
        decided_by uuid,
        decided_at timestamptz,
        note text,
        approved_arguments jsonb,
        approved_arguments_hash text,
        expires_at timestamptz NOT NULL,
        created_at timestamptz NOT NULL DEFAULT date_trunc('milliseconds', now()),
        FOREIGN KEY (org_id, agent_id) REFERENCES agent (org_id, id),
        CHECK ((status = 'pending') = (decided_at IS NULL) OR status = 'expired')
      )`);
    await q.query(`CREATE INDEX approval_org_idx ON approval (org_id, created_at DESC, id DESC)`);
    await q.query(`CREATE INDEX approval_org_status_idx ON approval (org_id, status, created_at DESC, id DESC)`);
    await q.query(`CREATE INDEX approval_pending_expiry_idx ON approval (expires_at) WHERE status = 'pending'`);

    await q.query(`
      CREATE TABLE tool_call_result (
        tool_call_id uuid PRIMARY KEY REFERENCES tool_call(id),
        org_id uuid NOT NULL REFERENCES org(id),
        result jsonb NOT NULL,
        tokens integer NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now()
      )`);

    // One row per run that a capability limits; the increment is the reservation.
    await q.query(`
      CREATE TABLE tool_run_budget (
        org_id uuid NOT NULL REFERENCES org(id),
        run_id text NOT NULL,
        calls integer NOT NULL,
        updated_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (org_id, run_id)
      )`);

    await q.query(`
      CREATE TABLE idempotency_key (
        org_id uuid NOT NULL REFERENCES org(id),
        key text NOT NULL,
        -- SHA-256 of the canonical JSON of the agent and the request body.
        request_hash text NOT NULL,
        -- Who holds the key while in progress: only the holder may finish or release it.
        claim_id uuid NOT NULL,
        status text NOT NULL CHECK (status IN ('in_progress', 'done')),
        tool_call_id uuid,
        response_status integer,
        response_body jsonb,
        -- A claim not finished by then belongs to a process that died before creating the call.
        locked_until timestamptz NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        expires_at timestamptz NOT NULL,
        PRIMARY KEY (org_id, key),
        CHECK (status = 'in_progress' OR (response_status IS NOT NULL AND response_body IS NOT NULL))
      )`);
    await q.query(`CREATE INDEX idempotency_key_expiry_idx ON idempotency_key (expires_at)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE idempotency_key`);
    await q.query(`DROP TABLE tool_run_budget`);
    await q.query(`DROP TABLE tool_call_result`);
    await q.query(`DROP TABLE approval`);
    await q.query(`DROP TABLE tool_call`);
  }
}
