import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { createTestDatabase } from '../test/support/test-database';
import type { AuditService } from '../src/audit/audit.service';
import { dataSourceOptions } from '../src/database/data-source-options';
import type { Metrics } from '../src/telemetry/metrics';
import { RunsRepository } from '../src/runs/runs.repository';

/**
 * What one poll's claim costs while one organization has N runs waiting for approval (each with
 * one call pending, the organization's only tool calls), nothing else to claim. Side by side, on
 * one database, in one process:
 *
 * - before: the claim of before session 29 (its statement, below), the runs as it left them (no gate);
 * - after, runs paused before the change: today's claim, no gate (its calls probed by primary key);
 * - after: today's claim, each run gated until its approval expires (as a pause now writes it).
 *
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/test node -r @swc-node/register bench/runs-claim.ts
 */
const SIZES = [1_000, 5_000, 20_000];
const POLLS = 9;

const BEFORE = `WITH taken AS (SELECT * FROM unnest($4::uuid[], $5::integer[]) AS t(org_id, n)),
  ranked AS (
    SELECT r.id, r.updated_at, row_number() OVER (PARTITION BY r.org_id ORDER BY r.updated_at, r.id) + COALESCE(t.n, 0) AS nth
      FROM run r LEFT JOIN taken t ON t.org_id = r.org_id
     WHERE ((r.status = 'running' AND (r.lease_expires_at IS NULL OR r.lease_expires_at <= now()))
        OR (r.status = 'waiting_for_approval' AND (r.lease_expires_at IS NULL OR r.lease_expires_at <= now())
            AND NOT EXISTS (SELECT 1 FROM tool_call c WHERE c.org_id = r.org_id AND c.id = ANY(r.pending_tool_call_ids)
                              AND (c.status = 'running' OR (c.status = 'pending_approval' AND c.approval_expires_at > now())))))
       AND (r.not_before IS NULL OR r.not_before <= now())
       AND COALESCE(t.n, 0) < $6),
  picked AS (SELECT id FROM ranked WHERE nth <= $6 ORDER BY nth, updated_at, id LIMIT $3),
  locked AS (SELECT r.id FROM run r JOIN picked p ON p.id = r.id FOR UPDATE OF r SKIP LOCKED)
  UPDATE run SET lease_owner = $1, lease_expires_at = now() + make_interval(secs => $2::double precision / 1000)
    FROM locked WHERE run.id = locked.id RETURNING run.id, run.org_id`;

async function main(): Promise<void> {
  const db = await createTestDatabase();
  const ds = new DataSource({ ...dataSourceOptions(db.url, db.poolSize), entities: [] });
  await ds.initialize();
  const repo = new RunsRepository(ds, {} as AuditService, {} as Metrics);
  const org = randomUUID();
  const agent = randomUUID();
  await ds.query(`INSERT INTO org (id, slug, name) VALUES ($1, 'waiting', 'Waiting')`, [org]);
  await ds.query(`INSERT INTO agent (id, org_id, slug, name, draft) VALUES ($1, $2, 'a', 'A', '{}')`, [agent, org]);
  await ds.query(
    `INSERT INTO agent_version (org_id, agent_id, version, spec, spec_hash, tool_digests, content_hash, published_by) VALUES ($1, $2, 1, '{}', 'h', '{}', 'c', $3)`,
    [org, agent, randomUUID()],
  );
  const timed = async (poll: () => Promise<unknown>) => {
    const ms: number[] = [];
    for (let i = 0; i < POLLS; i++) {
      const start = process.hrtime.bigint();
      await poll();
      ms.push(Number(process.hrtime.bigint() - start) / 1e6);
    }
    return ms.sort((a, b) => a - b)[POLLS >> 1];
  };
  const rows: string[] = [];
  let have = 0;
  for (const n of SIZES) {
    await ds.query(
      `WITH made AS (SELECT gen_random_uuid() AS run, gen_random_uuid() AS call FROM generate_series(1, $3::integer)),
            calls AS (
              INSERT INTO tool_call (id, org_id, agent_id, version, tool, capability_id, tool_id, run_id, entry_point, arguments, arguments_hash,
                                     status, requested_by, approval_id, approval_expires_at)
              SELECT call, $1, $2, 1, 't', 'c', 't', run::text, 'run', '{}', 'h', 'pending_approval', gen_random_uuid(), gen_random_uuid(), now() + interval '1 day'
                FROM made RETURNING 1)
       INSERT INTO run (id, org_id, agent_id, version, status, input, messages, requested_by, pending_tool_call_ids)
       SELECT run, $1, $2, 1, 'waiting_for_approval', 'x', '[]', gen_random_uuid(), ARRAY[call] FROM made`,
      [org, agent, n - have],
    );
    have = n;
    await ds.query(`ANALYZE run; ANALYZE tool_call`);
    const args = ['node-a', 30_000, 8, [] as string[], [] as number[], 4];
    await ds.query(`UPDATE run SET not_before = NULL`);
    await ds.query(`ANALYZE run`);
    const before = await timed(() => ds.query(BEFORE, args));
    const ungated = await timed(() => repo.claim('node-a', 30_000, 8, { taken: new Map(), max: 4 }));
    await ds.query(`UPDATE run r SET not_before = c.approval_expires_at FROM tool_call c WHERE c.id = r.pending_tool_call_ids[1]`);
    // As autovacuum would know them: the runs arrive paused, not all at once with no gate and then gated.
    await ds.query(`ANALYZE run`);
    const gated = await timed(() => repo.claim('node-a', 30_000, 8, { taken: new Map(), max: 4 }));
    rows.push(`| ${n.toLocaleString('en')} | ${before.toFixed(1)} | ${ungated.toFixed(1)} | ${gated.toFixed(2)} |`);
    console.log(rows.at(-1));
  }
  console.log(['| waiting runs | before (ms) | after, runs paused before it (ms) | after (ms) |', '|---|---|---|---|', ...rows].join('\n'));
  await ds.destroy();
  await db.drop();
}

void main();
