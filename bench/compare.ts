import { execFileSync, execSync } from 'node:child_process';
import { mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { benchOptions, publicOptions, ROOT } from './lib/options';
import { fixed, machine, printTable, saveResults } from './lib/report';
import { BenchSession } from './lib/session';
import { printThroughput, runItems, ThroughputItem } from './lib/throughput';
import { SCENARIOS } from './run';
import { DIAGNOSTICS } from './scenarios/diagnostics';

/**
 * Before and after in ONE run: the same scenarios against two product servers at once, measured
 * in interleaved rounds, so the machine's load lands on both alike. On a shared 2-core machine,
 * figures from two separate runs cannot be compared; these can.
 *
 *   npm run bench:compare -- --ref=main                    # main (before) vs the working tree (after)
 *   npm run bench:compare -- --ref=abc123 --ref-b=def456   # two commits
 *   npm run bench:compare -- --a-env=LOG_LEVEL=warn        # the working tree twice, A with other env
 *   ... --only=tool-call,offered-tools                      # which product scenarios (default: all)
 *
 * A ref is extracted with `git archive` into a temporary directory (no worktree, no checkout) that
 * uses this checkout's node_modules. The governed floor runs once, as the reference row.
 */
async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const flag = (name: string) => args.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
  const ref = flag('ref');
  // NAME=value,...: a value may hold '=' itself (NODE_OPTIONS=--max-semi-space-size=64).
  const envOf = (raw: string | undefined) =>
    Object.fromEntries(
      (raw ? raw.split(',') : []).map((kv) => {
        const at = kv.indexOf('=');
        if (at < 1) throw new Error(`--a-env/--b-env: "${kv}" is not NAME=value`);
        return [kv.slice(0, at), kv.slice(at + 1)];
      }),
    );
  const only = flag('only')?.split(',');
  const options = benchOptions();

  const checkouts: string[] = [];
  const extract = (r: string): { root: string; label: string } => {
    const sha = execFileSync('git', ['rev-parse', '--short', r], { cwd: ROOT }).toString().trim();
    const root = mkdtempSync(join(tmpdir(), `bench-ref-${sha}-`));
    checkouts.push(root);
    execSync(`git archive --format=tar ${sha} | tar -x -C ${root}`, { cwd: ROOT });
    symlinkSync(join(ROOT, 'node_modules'), join(root, 'node_modules'));
    return { root, label: `${r} (${sha})` };
  };
  const refB = flag('ref-b');
  const treeA = ref ? extract(ref) : { root: undefined, label: 'working tree' };
  const treeB = refB ? extract(refB) : { root: undefined, label: 'working tree' };
  const envA = envOf(flag('a-env'));
  const envB = envOf(flag('b-env'));
  const labelA = `A: ${treeA.label}${Object.keys(envA).length ? ` ${JSON.stringify(envA)}` : ''}`;
  const labelB = `B: ${treeB.label}${Object.keys(envB).length ? ` ${JSON.stringify(envB)}` : ''}`;

  const a = new BenchSession(options, { root: treeA.root, label: 'product-a', env: envA });
  const b = new BenchSession(options, { root: treeB.root, label: 'product-b', env: envB });
  // Diagnostic rows only when named (`--only=catalog-304`), as in `npm run bench`.
  const known = only ? [...SCENARIOS, ...DIAGNOSTICS.filter((d) => !SCENARIOS.includes(d))] : SCENARIOS;
  const product = known.filter((s) => !['bare-fastify', 'governed-floor'].includes(s.id) && (!only || only.includes(s.id)));
  const floor = SCENARIOS.find((s) => s.id === 'governed-floor')!;
  const items: ThroughputItem[] = [{ scenario: floor, session: b }];
  for (const scenario of product) {
    items.push({ scenario, session: a, id: `${scenario.id}@a`, name: `${scenario.name} [A]` });
    items.push({ scenario, session: b, id: `${scenario.id}@b`, name: `${scenario.name} [B]` });
  }

  let failed = false;
  try {
    const database = await b.databaseVersion();
    const result = await runItems(items, options);
    printThroughput(
      `Compare — ${labelA} vs ${labelB} — ${database}, ${options.connections} connections, ${options.rounds} interleaved rounds of ${options.duration}s`,
      result,
    );
    const byId = new Map(result.rows.map((r) => [r.id, r.measurement]));
    printTable({
      title: `B against A, same run (${labelA} -> ${labelB})`,
      columns: ['scenario', 'A req/s', 'B req/s', 'B/A', 'A p50', 'B p50', 'A p99', 'B p99'],
      rows: product
        .filter((s) => byId.has(`${s.id}@a`) && byId.has(`${s.id}@b`))
        .map((s) => {
          const ma = byId.get(`${s.id}@a`)!;
          const mb = byId.get(`${s.id}@b`)!;
          return [
            s.name,
            Math.round(ma.rps),
            Math.round(mb.rps),
            fixed(mb.rps / ma.rps, 2),
            fixed(ma.p50, 1),
            fixed(mb.p50, 1),
            fixed(ma.p99, 1),
            fixed(mb.p99, 1),
          ];
        }),
    });
    if (options.save) {
      const file = saveResults(
        {
          date: new Date().toISOString(),
          machine: machine(),
          database,
          options: publicOptions(options),
          compare: { a: labelA, b: labelB },
          throughput: result,
        },
        `${a.mode}-compare`,
      );
      process.stdout.write(`results: ${file}\n`);
    }
  } catch (err) {
    failed = true;
    process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  } finally {
    await a.close();
    await b.close();
    for (const root of checkouts) rmSync(root, { recursive: true, force: true });
  }
  process.exit(failed ? 1 : 0);
}

void main();
