import { execFileSync, execSync } from 'node:child_process';
import { mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expectStatus, type Api } from './lib/http';
import { benchOptions, ROOT } from './lib/options';
import { printTable } from './lib/report';
import { BenchSession } from './lib/session';

/**
 * Database round trips per request, counted by the product itself: the `db_query_duration_seconds`
 * and `db_query_errors_total` counts of GET /metrics (every statement through TypeORM, BEGIN and
 * COMMIT included) read before and after each request, one request at a time, the fewest over a
 * few repetitions (a sweeper's or a scrape's own query can land in between). Not a speed figure:
 * a count, the same on a busy machine as on a quiet one.
 *
 *   node -r @swc-node/register bench/round-trips.ts                 # the working tree
 *   node -r @swc-node/register bench/round-trips.ts --ref=main      # and a ref beside it
 */
async function main(): Promise<void> {
  const ref = process.argv.find((a) => a.startsWith('--ref='))?.slice(6);
  const options = { ...benchOptions(), save: false };
  const cleanup: string[] = [];
  const targets: { label: string; session: BenchSession }[] = [];
  if (ref) {
    const sha = execFileSync('git', ['rev-parse', '--short', ref], { cwd: ROOT }).toString().trim();
    const root = mkdtempSync(join(tmpdir(), `bench-ref-${sha}-`));
    cleanup.push(root);
    execSync(`git archive --format=tar ${sha} | tar -x -C ${root}`, { cwd: ROOT });
    symlinkSync(join(ROOT, 'node_modules'), join(root, 'node_modules'));
    targets.push({ label: `${ref} (${sha})`, session: new BenchSession(options, { root, label: 'product-a' }) });
  }
  targets.push({ label: 'working tree', session: new BenchSession(options, { label: 'product-b' }) });
  try {
    const counts: Record<string, number>[] = [];
    for (const t of targets) counts.push(await countRoundTrips(t.session));
    const names = Object.keys(counts[0]);
    printTable({
      title: `Database round trips per request (statements, BEGIN and COMMIT included; fewest of ${REPEAT})`,
      columns: ['request', ...targets.map((t) => t.label)],
      rows: names.map((n) => [n, ...counts.map((c) => c[n])]),
    });
  } finally {
    for (const t of targets) await t.session.close();
    for (const dir of cleanup) rmSync(dir, { recursive: true, force: true });
  }
}

const REPEAT = 5;

async function countRoundTrips(session: BenchSession): Promise<Record<string, number>> {
  const product = await session.product();
  const agent = await session.agent();
  const api = product.api;
  const asAgent = api.as(product.org.keys.agent);
  const asApprover = api.as(product.org.keys.approver);
  const calls = `/api/v1/agents/${agent.id}/tool-calls`;
  let n = 1000;

  const queries = async (): Promise<number> => {
    const res = await fetch(`${product.server.url}/metrics`);
    const text = await res.text();
    const count = (name: string) =>
      text
        .split('\n')
        .filter((l) => l.startsWith(name))
        .reduce((sum, l) => sum + Number(l.split(' ').pop()), 0);
    return count('db_query_duration_seconds_count') + count('db_query_errors_total');
  };
  // A scrape reads the pending approvals itself, and the sweeper queries on its own: background
  // work only ever adds, so the fewest seen over the repetitions are the figures (the scrape's
  // own, and the request's with one scrape), and their difference is the request's.
  const measure = async (work: () => Promise<unknown>): Promise<number> => {
    let scrape = Infinity;
    let withWork = Infinity;
    for (let i = 0; i < REPEAT; i++) {
      const base0 = await queries();
      const base1 = await queries();
      await work();
      const after = await queries();
      scrape = Math.min(scrape, base1 - base0);
      withWork = Math.min(withWork, after - base1);
    }
    return withWork - scrape;
  };
  const pending = async (client: Api) => {
    const res = await client.post<{ id: string; approvalId: string }>(calls, { tool: agent.mutatingTool.name, arguments: agent.mutatingTool.arguments(++n) });
    expectStatus(res, 202, 'a mutating call');
    return res.body;
  };

  const out: Record<string, number> = {};
  out['GET /me'] = await measure(async () => expectStatus(await asAgent.get('/api/v1/me'), 200, 'me'));
  out['read-only call, latest'] = await measure(async () =>
    expectStatus(await asAgent.post(calls, { tool: agent.readOnlyTool.name, arguments: agent.readOnlyTool.arguments }), 200, 'read-only call'),
  );
  out['read-only call, version pinned'] = await measure(async () =>
    expectStatus(await asAgent.post(calls, { tool: agent.readOnlyTool.name, arguments: agent.readOnlyTool.arguments, version: 1 }), 200, 'pinned call'),
  );
  out['mutating call, answered 202'] = await measure(async () => void (await pending(asAgent)));
  let approval = await pending(asAgent);
  const approvals: string[] = [];
  for (let i = 0; i < REPEAT; i++) approvals.push((await pending(asAgent)).approvalId);
  out['approving it (the tool runs)'] = await measure(async () =>
    expectStatus(await asApprover.post(`/api/v1/approvals/${approvals.pop()}/approve`, {}), 200, 'approve'),
  );
  out['reading the call back'] = await measure(async () => expectStatus(await asAgent.get(`/api/v1/tool-calls/${approval.id}`), 200, 'read'));
  const cycle = async () => {
    approval = await pending(asAgent);
    expectStatus(await asApprover.post(`/api/v1/approvals/${approval.approvalId}/approve`, {}), 200, 'approve');
    expectStatus(await asAgent.get(`/api/v1/tool-calls/${approval.id}`), 200, 'read');
  };
  out['approval cycle (the three)'] = await measure(cycle);
  return out;
}

if (require.main === module) {
  main().then(
    () => process.exit(0),
    (err: unknown) => {
      process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
      process.exit(1);
    },
  );
}
