import { expectStatus } from './http';
import { combine, LoadSpec, Measurement, runLoad } from './load';
import { printTable, ThroughputRow, throughputTable } from './report';
import type { BenchSession } from './session';

/** A scenario the product cannot serve (yet): it is listed as skipped, with the reason, not measured. */
export class Unavailable extends Error {}

export interface ThroughputScenario {
  id: string;
  /** The row's label in the table. */
  name: string;
  /** What it measures, for the results file and docs. */
  description: string;
  /**
   * Starts what the scenario needs (lazily, through the session), checks that one request answers
   * as the scenario claims, and returns the load to apply.
   */
  prepare(session: BenchSession): Promise<LoadSpec>;
}

export interface ThroughputResult {
  rows: ThroughputRow[];
  skipped: { id: string; name: string; reason: string }[];
  /** The load generator's (this process's) heap in use when the rounds began, MB: what each of its full collections walks. */
  loadGeneratorHeapMb?: number;
}

function log(message: string): void {
  process.stderr.write(`[bench] ${message}\n`);
}

/**
 * Measures scenarios side by side: every target is prepared first, then each scenario is warmed
 * up, then measured in rounds that interleave the scenarios (A B C, B C A, ...), so a burst of
 * load from elsewhere on the machine lands on every row, not on one.
 */
export async function runThroughput(session: BenchSession, scenarios: readonly ThroughputScenario[]): Promise<ThroughputResult> {
  return runItems(
    scenarios.map((scenario) => ({ scenario, session })),
    session.options,
  );
}

/** One row: a scenario against the targets of one session (bench/compare.ts measures a scenario against two). */
export interface ThroughputItem {
  scenario: ThroughputScenario;
  session: BenchSession;
  /** Row id and label, when a scenario appears more than once. */
  id?: string;
  name?: string;
}

export async function runItems(items: readonly ThroughputItem[], options: BenchSession['options']): Promise<ThroughputResult> {
  const { duration, rounds, warmup } = options;
  const ready: { scenario: { id: string; name: string }; spec: LoadSpec }[] = [];
  const skipped: ThroughputResult['skipped'] = [];
  for (const item of items) {
    const scenario = { id: item.id ?? item.scenario.id, name: item.name ?? item.scenario.name };
    log(`preparing ${scenario.id}`);
    try {
      ready.push({ scenario, spec: await item.scenario.prepare(item.session) });
    } catch (err) {
      if (!(err instanceof Unavailable)) throw err;
      log(`skipping ${scenario.id}: ${err.message}`);
      skipped.push({ id: scenario.id, name: scenario.name, reason: err.message });
    }
  }
  for (const { scenario, spec } of ready) {
    log(`warming up ${scenario.id} (${warmup}s)`);
    await runLoad(spec, warmup);
  }
  const measured = new Map<string, Measurement[]>(ready.map((r) => [r.scenario.id, []]));
  const loadGeneratorHeapMb = Math.round(process.memoryUsage().heapUsed / 1e5) / 10;
  for (let round = 1; round <= rounds; round++) {
    // Each round starts one scenario later (A B C, B C A, C A B): whatever being first or last in
    // a round does (the first ran right after the others' warm-up, say) falls on every row alike.
    const shift = (round - 1) % ready.length;
    for (const { scenario, spec } of [...ready.slice(shift), ...ready.slice(0, shift)]) {
      log(`round ${round}/${rounds}: ${scenario.id} (${duration}s)`);
      measured.get(scenario.id)!.push(await runLoad(spec, duration));
    }
  }
  const rows = ready.map(({ scenario }) => {
    const all = measured.get(scenario.id)!;
    return { id: scenario.id, name: scenario.name, measurement: combine(all), rounds: all };
  });
  return { rows, skipped, loadGeneratorHeapMb };
}

export function printThroughput(title: string, result: ThroughputResult, notes: string[] = []): void {
  const table = throughputTable(title, result.rows);
  table.notes = [
    ...result.skipped.map((s) => `skipped: ${s.name}: ${s.reason}`),
    ...result.rows.filter((r) => r.measurement.errors > 0).map((r) => `${r.name}: errors by status ${JSON.stringify(r.measurement.statusCodes)}`),
    `load generator (${result.loadGeneratorHeapMb ?? '?'} MB of heap), CPU ms per unit and ms stopped for GC over the rounds: ${result.rows
      .map((r) => `${r.id} ${r.measurement.loadGeneratorCpuMsPerUnit?.toFixed(3) ?? '-'} / ${(r.measurement.loadGeneratorGcMs ?? 0).toFixed(0)}`)
      .join(', ')}`,
    ...notes,
  ];
  printTable(table);
}

/**
 * The `prepare` of a row that GETs one path with the organization's builder key: checked once to
 * answer 200, then requested as it is.
 */
export function getWithBuilderKey(path: string): ThroughputScenario['prepare'] {
  return async (session) => {
    const product = await session.product();
    const token = product.org.keys.builder;
    expectStatus(await product.api.as(token).get(path), 200, `GET ${path}`);
    return {
      url: product.server.url,
      serverPid: product.server.pid,
      connections: session.options.connections,
      requests: [{ method: 'GET', path, headers: { authorization: `Bearer ${token}` } }],
    };
  };
}
