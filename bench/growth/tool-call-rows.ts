import { Client } from 'pg';
import { performance } from 'node:perf_hooks';
import { Measurement } from '../lib/load';
import { runItems } from '../lib/throughput';
import { BenchOptions, benchOptions } from '../lib/options';
import { fixed, printTable, Table } from '../lib/report';
import { BenchSession } from '../lib/session';
import { toolCall } from '../scenarios/tool-call';

export interface RowLevel {
  /** Rows asked for in each table. */
  target: number;
  toolCalls: number;
  auditEvents: number;
  /** Seconds the inserts took (generate_series, one statement per table). */
  insertS: number;
  measurement: Measurement;
}

/**
 * 1M rows in PGlite take minutes to write (WebAssembly, one connection), which the five-minute
 * budget of `npm run bench` cannot hold: the embedded run stops at 100k, the server run goes to 1M.
 */
export function rowLevels(options: BenchOptions): number[] {
  const given = process.env.BENCH_ROW_LEVELS;
  if (given) return given.split(',').map((s) => Number(s.trim()));
  return options.databaseUrl ? [0, 10_000, 1_000_000] : [0, 10_000, 100_000];
}

/**
 * The governed read-only call with tool_call and audit_event already holding N rows of the same
 * organization and agent (the worst case for indexes that lead with org_id). One server and
 * database per level, the rows written with generate_series straight into the product's tables,
 * then ANALYZE (as autovacuum would, eventually); then the levels are measured side by side in
 * interleaved rounds, like the first table, so that time (JIT warm-up, other load) does not pass
 * for growth.
 */
export async function measureToolCallGrowth(options = benchOptions()): Promise<RowLevel[]> {
  const levels = rowLevels(options);
  const sessions = levels.map((_, i) => new BenchSession(options, { label: `product-rows-${i}` }));
  try {
    // The levels are set up at the same time: most of it is servers starting and rows being written.
    const counted = await Promise.all(
      levels.map(async (target, i) => {
        const session = sessions[i];
        const product = await session.product();
        const agent = await session.agent();
        process.stderr.write(`[bench] tool calls with ${target} rows already there: inserting\n`);
        return product.withDatabase(async (url) => {
          const client = new Client({ connectionString: url });
          await client.connect();
          try {
            const t = performance.now();
            if (target > 0) await insertRows(client, product.org.id, agent.id, product.org.keyIds.agent, target);
            const insertS = (performance.now() - t) / 1000;
            await client.query('ANALYZE tool_call');
            await client.query('ANALYZE audit_event');
            const { rows } = await client.query<{ calls: string; events: string }>(
              `SELECT (SELECT count(*) FROM tool_call) AS calls, (SELECT count(*) FROM audit_event) AS events`,
            );
            return { target, toolCalls: Number(rows[0].calls), auditEvents: Number(rows[0].events), insertS };
          } finally {
            await client.end();
          }
        });
      }),
    );
    // Two rounds: this table asks whether the rows change anything, not how fast a call is.
    const result = await runItems(
      levels.map((target, i) => ({ scenario: toolCall, session: sessions[i], id: `rows-${i}`, name: `${target} rows` })),
      { ...options, rounds: Math.min(options.rounds, 2) },
    );
    return counted.map((c, i) => ({ ...c, measurement: result.rows.find((r) => r.id === `rows-${i}`)!.measurement }));
  } finally {
    for (const session of sessions) await session.close();
  }
}

async function insertRows(client: Client, orgId: string, agentId: string, keyId: string, count: number): Promise<void> {
  // Spread over the last 30 days, newest last, like a real history; all of this organization.
  await client.query(
    `INSERT INTO tool_call (id, org_id, agent_id, version, tool, capability_id, tool_id, entry_point, arguments,
                            arguments_hash, status, result, result_tokens, requested_by, created_at, started_at, completed_at)
     SELECT gen_random_uuid(), $1, $2, 1, 'list_skills', 'skills', 'list_skills', 'rest', '{}'::jsonb,
            md5(i::text) || md5((i + 1)::text), 'succeeded', '{"skills": []}'::jsonb, 5, $3,
            now() - make_interval(secs => (30 * 86400.0) * ($4 - i) / $4), now(), now()
       FROM generate_series(1, $4::int) AS i`,
    [orgId, agentId, keyId, count],
  );
  await client.query(
    `INSERT INTO audit_event (id, org_id, at, type, actor_type, actor_id, target_type, target_id, data)
     SELECT gen_random_uuid(), $1, now() - make_interval(secs => (30 * 86400.0) * ($3 - i) / $3),
            CASE WHEN i % 2 = 0 THEN 'tool_call.succeeded' ELSE 'tool_call.requested' END,
            'api_key', $2, 'tool_call', gen_random_uuid()::text, '{"tool": "list_skills"}'::jsonb
       FROM generate_series(1, $3::int) AS i`,
    [orgId, keyId, count],
  );
}

export function rowsTable(levels: readonly RowLevel[]): Table {
  const first = levels[0]?.measurement.rps ?? 0;
  return {
    title: 'Governed read-only call with rows already in tool_call and audit_event (same organization and agent)',
    columns: ['rows asked', 'tool_call rows', 'audit rows', 'insert s', 'req/s', 'p50 ms', 'p99 ms', 'errors', 'ratio', 'server CPU ms'],
    rows: levels.map((l) => [
      l.target,
      l.toolCalls,
      l.auditEvents,
      fixed(l.insertS, 1),
      Math.round(l.measurement.rps),
      fixed(l.measurement.p50, 1),
      fixed(l.measurement.p99, 1),
      l.measurement.errors,
      first > 0 ? fixed(l.measurement.rps / first, 3) : '-',
      l.measurement.serverCpuMsPerUnit === undefined ? '-' : fixed(l.measurement.serverCpuMsPerUnit, 3),
    ]),
    notes: [
      'One server and database per level, measured side by side in interleaved rounds.',
      'Row counts are before the measurement; each level adds a few thousand calls of its own while measured.',
    ],
  };
}

if (require.main === module) {
  measureToolCallGrowth()
    .then((levels) => printTable(rowsTable(levels)))
    .then(() => process.exit(0))
    .catch((err: unknown) => {
      process.stderr.write(`${(err as Error).stack}\n`);
      process.exit(1);
    });
}
