import Fastify from 'fastify';
import { createHash, randomUUID } from 'node:crypto';
import { Pool } from 'pg';
import { startEmbeddedDatabase, EmbeddedDatabase } from '../../src/database/embedded-database';

/**
 * The governed floor: the least a governed, audited tool call can cost on this machine, written by
 * hand on bare Fastify and `pg`, with nothing of the product's framework. Per call:
 *   1. the key looked up by the SHA-256 of its token, joined with its organization's scopes;
 *   2. role and scope checked in memory;
 *   3. ONE statement (one commit) inserting the call, already succeeded, and its two audit events.
 * Its tables mirror the product's tool_call and audit_event (columns, checks, indexes, foreign
 * keys, as of migrations/1764481000000-tool-calls.ts; keep them in step) but are its own, created here in a database of its own: the floor never depends on, or touches, the
 * product's migrations.
 *
 * Environment: FLOOR_TOKEN (the one key's token), and DATABASE_URL (a fresh database) or DATA_DIR
 * (the embedded PGlite, exactly as the product runs it: in-process, behind the socket, pool of 1).
 */
const SCOPE = 'floor:read';

const SCHEMA = `
  CREATE TABLE IF NOT EXISTS floor_org (
    id uuid PRIMARY KEY,
    slug text NOT NULL UNIQUE,
    scopes text[] NOT NULL DEFAULT '{}',
    created_at timestamptz NOT NULL DEFAULT now()
  );
  CREATE TABLE IF NOT EXISTS floor_api_key (
    id uuid PRIMARY KEY,
    org_id uuid NOT NULL REFERENCES floor_org(id),
    roles text[] NOT NULL,
    token_hash text NOT NULL UNIQUE,
    revoked_at timestamptz
  );
  CREATE TABLE IF NOT EXISTS floor_agent (
    id uuid PRIMARY KEY,
    org_id uuid NOT NULL REFERENCES floor_org(id),
    UNIQUE (org_id, id)
  );
  CREATE TABLE IF NOT EXISTS floor_agent_version (
    org_id uuid NOT NULL,
    agent_id uuid NOT NULL,
    version integer NOT NULL,
    PRIMARY KEY (agent_id, version),
    FOREIGN KEY (org_id, agent_id) REFERENCES floor_agent (org_id, id)
  );
  CREATE TABLE IF NOT EXISTS floor_tool_call (
    id uuid PRIMARY KEY,
    org_id uuid NOT NULL REFERENCES floor_org(id),
    agent_id uuid NOT NULL,
    version integer NOT NULL,
    tool text NOT NULL,
    capability_id text NOT NULL,
    tool_id text NOT NULL,
    run_id text,
    entry_point text NOT NULL CHECK (entry_point IN ('rest', 'mcp', 'run')),
    arguments jsonb NOT NULL,
    arguments_hash text NOT NULL,
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
    approval_expires_at timestamptz,
    requested_by uuid NOT NULL,
    awaiting_requester boolean NOT NULL DEFAULT false,
    lease_expires_at timestamptz,
    created_at timestamptz NOT NULL DEFAULT date_trunc('milliseconds', now()),
    started_at timestamptz,
    completed_at timestamptz,
    FOREIGN KEY (org_id, agent_id) REFERENCES floor_agent (org_id, id),
    FOREIGN KEY (agent_id, version) REFERENCES floor_agent_version (agent_id, version)
  );
  CREATE INDEX IF NOT EXISTS floor_tool_call_org_idx ON floor_tool_call (org_id, created_at DESC, id DESC);
  CREATE INDEX IF NOT EXISTS floor_tool_call_org_agent_idx ON floor_tool_call (org_id, agent_id, created_at DESC, id DESC);
  CREATE INDEX IF NOT EXISTS floor_tool_call_org_status_idx ON floor_tool_call (org_id, status, created_at DESC, id DESC);
  CREATE INDEX IF NOT EXISTS floor_tool_call_org_run_idx ON floor_tool_call (org_id, run_id, created_at DESC, id DESC) WHERE run_id IS NOT NULL;
  CREATE INDEX IF NOT EXISTS floor_tool_call_lease_idx ON floor_tool_call (lease_expires_at) WHERE status = 'running';
  CREATE INDEX IF NOT EXISTS floor_tool_call_awaiting_idx ON floor_tool_call (org_id, agent_id, requested_by, arguments_hash) WHERE awaiting_requester;
  CREATE TABLE IF NOT EXISTS floor_audit_event (
    seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    id uuid NOT NULL UNIQUE,
    org_id uuid,
    at timestamptz NOT NULL DEFAULT now(),
    type text NOT NULL,
    actor_type text NOT NULL,
    actor_id text NOT NULL,
    target_type text NOT NULL,
    target_id text NOT NULL,
    data jsonb NOT NULL DEFAULT '{}'
  );
  CREATE INDEX IF NOT EXISTS floor_audit_event_org_idx ON floor_audit_event (org_id, seq DESC);
  CREATE INDEX IF NOT EXISTS floor_audit_event_org_type_idx ON floor_audit_event (org_id, type, seq DESC);
`;

const KEY_LOOKUP = `
  SELECT k.id, k.org_id, k.roles, o.scopes
    FROM floor_api_key k JOIN floor_org o ON o.id = k.org_id
   WHERE k.token_hash = $1 AND k.revoked_at IS NULL`;

/** The call, already run, and its two audit events: one statement, one commit. */
const INSERT_CALL = `
  WITH c AS (
    INSERT INTO floor_tool_call (id, org_id, agent_id, version, tool, capability_id, tool_id, entry_point,
                                 arguments, arguments_hash, status, result, result_tokens, requested_by,
                                 started_at, completed_at)
    VALUES ($1, $2, $3, 1, 'echo', 'floor', 'echo', 'rest', $4::jsonb, $5, 'succeeded', $6::jsonb, $7, $8, now(), now())
    RETURNING id, created_at, completed_at
  ), e AS (
    INSERT INTO floor_audit_event (id, org_id, type, actor_type, actor_id, target_type, target_id, data)
    SELECT v.id, $2, v.type, 'api_key', $8::text, 'tool_call', c.id::text, v.data
      FROM c, (VALUES ($9::uuid, 'tool_call.requested', $10::jsonb), ($11::uuid, 'tool_call.succeeded', $10::jsonb)) AS v(id, type, data)
  )
  SELECT created_at, completed_at FROM c`;

interface KeyRow {
  id: string;
  org_id: string;
  roles: string[];
  scopes: string[];
}

async function main(): Promise<void> {
  const token = process.env.FLOOR_TOKEN;
  if (!token) throw new Error('FLOOR_TOKEN is required');
  let embedded: EmbeddedDatabase | undefined;
  let url = process.env.DATABASE_URL;
  let poolSize = Number(process.env.DATABASE_POOL_SIZE ?? 10);
  if (!url) {
    embedded = await startEmbeddedDatabase(process.env.DATA_DIR);
    url = embedded.url;
    poolSize = 1;
  }
  const pool = new Pool({ connectionString: url, max: poolSize, application_name: 'governed-floor' });
  await pool.query(SCHEMA);
  const orgId = randomUUID();
  const agentId = randomUUID();
  await pool.query(`INSERT INTO floor_org (id, slug, scopes) VALUES ($1, 'floor', $2)`, [orgId, [SCOPE]]);
  await pool.query(`INSERT INTO floor_api_key (id, org_id, roles, token_hash) VALUES ($1, $2, $3, $4)`, [randomUUID(), orgId, ['agent'], sha256(token)]);
  await pool.query(`INSERT INTO floor_agent (id, org_id) VALUES ($1, $2)`, [agentId, orgId]);
  await pool.query(`INSERT INTO floor_agent_version (org_id, agent_id, version) VALUES ($1, $2, 1)`, [orgId, agentId]);

  const app = Fastify({ logger: false });
  app.post('/floor/tool-calls', async (request, reply) => {
    const match = /^Bearer\s+(\S+)\s*$/i.exec(request.headers.authorization ?? '');
    if (!match) return reply.code(401).send({ code: 'unauthorized' });
    const { rows } = await pool.query<KeyRow>(KEY_LOOKUP, [sha256(match[1])]);
    const key = rows[0];
    if (!key) return reply.code(401).send({ code: 'unauthorized' });
    if (!key.roles.includes('agent')) return reply.code(403).send({ code: 'forbidden' });
    if (!key.scopes.includes(SCOPE)) return reply.code(403).send({ code: 'scope_not_granted' });
    const body = request.body as { tool?: unknown; arguments?: unknown };
    if (body?.tool !== 'echo' || typeof body.arguments !== 'object' || body.arguments === null) {
      return reply.code(422).send({ code: 'invalid_arguments' });
    }
    const args = JSON.stringify(body.arguments);
    const argumentsHash = sha256(args);
    const result = { echo: body.arguments };
    const id = randomUUID();
    const audit = JSON.stringify({ tool: 'echo', argumentsHash });
    const inserted = await pool.query<{ created_at: Date; completed_at: Date }>(INSERT_CALL, [
      id,
      key.org_id,
      agentId,
      args,
      argumentsHash,
      JSON.stringify(result),
      8,
      key.id,
      randomUUID(),
      audit,
      randomUUID(),
    ]);
    const row = inserted.rows[0];
    return reply.code(200).send({
      id,
      agentId,
      version: 1,
      tool: 'echo',
      capabilityId: 'floor',
      toolId: 'echo',
      runId: null,
      arguments: body.arguments,
      status: 'succeeded',
      result,
      resultTruncated: false,
      requestedBy: key.id,
      createdAt: row.created_at,
      completedAt: row.completed_at,
    });
  });
  const address = await app.listen({ port: Number(process.env.PORT ?? 0), host: process.env.HOST ?? '127.0.0.1' });
  process.stdout.write(`listening on ${address}\n`);

  const stop = async () => {
    await app.close();
    await pool.end();
    await embedded?.stop();
    process.exit(0);
  };
  process.once('SIGTERM', () => void stop());
  process.once('SIGINT', () => void stop());
}

function sha256(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}

main().catch((err: unknown) => {
  process.stderr.write(`governed floor: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
