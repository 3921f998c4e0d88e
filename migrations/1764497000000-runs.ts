import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Model providers and agent runs. A run is a row that is also its own job: `lease_owner` and
 * `lease_expires_at` say which node is stepping it and until when; a node that dies leaves a lease
 * that expires, and any other node claims the row. `run_event` is the run's event stream (its
 * `seq` is the SSE event id), written in the same statement as the state it reports.
 */
export class Runs1764497000000 implements MigrationInterface {
  name = 'Runs1764497000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE model_provider (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        org_id uuid NOT NULL REFERENCES org(id),
        name text NOT NULL,
        kind text NOT NULL CHECK (kind IN ('openai-compatible')),
        base_url text NOT NULL,
        api_key_sealed text,
        created_at timestamptz NOT NULL DEFAULT now(),
        UNIQUE (org_id, name),
        UNIQUE (org_id, id)
      )`);
    await q.query(`
      CREATE TABLE run (
        id uuid PRIMARY KEY,
        org_id uuid NOT NULL REFERENCES org(id),
        agent_id uuid NOT NULL,
        version integer NOT NULL,
        profile text,
        worker_type text,
        status text NOT NULL CHECK (status IN ('running', 'waiting_for_approval', 'succeeded', 'failed', 'cancelled')),
        input text NOT NULL,
        messages jsonb NOT NULL,
        pending jsonb NOT NULL DEFAULT '[]',
        compaction jsonb,
        output text,
        tool_call_ids uuid[] NOT NULL DEFAULT '{}',
        pending_tool_call_ids uuid[] NOT NULL DEFAULT '{}',
        pending_approval_ids uuid[] NOT NULL DEFAULT '{}',
        usage jsonb NOT NULL DEFAULT '{"modelCalls":0,"inputTokens":0,"outputTokens":0,"toolCalls":0}',
        error_code text,
        error_message text,
        requested_by uuid NOT NULL,
        lease_owner text,
        lease_expires_at timestamptz,
        not_before timestamptz,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        completed_at timestamptz,
        FOREIGN KEY (org_id, agent_id) REFERENCES agent(org_id, id)
      )`);
    await q.query(`CREATE INDEX run_org_created ON run (org_id, created_at DESC, id DESC)`);
    // What the workers scan: only runs that are not finished.
    await q.query(`CREATE INDEX run_active ON run (status, lease_expires_at) WHERE status IN ('running', 'waiting_for_approval')`);
    await q.query(`CREATE INDEX run_model_provider ON agent_version ((spec->'model'->>'provider')) WHERE spec ? 'model'`);
    await q.query(`
      CREATE TABLE run_event (
        seq bigserial PRIMARY KEY,
        org_id uuid NOT NULL,
        run_id uuid NOT NULL REFERENCES run(id),
        type text NOT NULL,
        data jsonb NOT NULL,
        at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`CREATE INDEX run_event_run_seq ON run_event (run_id, seq)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE run_event`);
    await q.query(`DROP INDEX run_model_provider`);
    await q.query(`DROP TABLE run`);
    await q.query(`DROP TABLE model_provider`);
  }
}
