import { benchOptions } from './lib/options';
import { median } from './lib/load';
import { BenchSession } from './lib/session';
import { runItems, ThroughputItem } from './lib/throughput';
import { SCENARIOS } from './run';

/**
 * One scenario against several servers of the working tree at once, each with its own environment,
 * measured in interleaved rounds: the first variant is the base, and each round of every other is
 * divided by the same round of the base, so a burst of load from outside lands on a pair alike.
 * For levers that cost or save a few percent, where runs minutes apart differ by more than that:
 *
 *   npm run bench:variants -- off: exporting:OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318
 *   npm run bench:variants -- --scenario=catalog base: other:NAME=value,NAME2=value2
 *
 * Each variant is `label:NAME=value,...` (a value may hold '='). Prints, per variant, its
 * requests per second and server CPU per request over all rounds, and against the base: the ratio
 * of the totals and the median of the per-round ratios, with every round's ratio. Saves nothing.
 */
async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const scenarioId = args.find((a) => a.startsWith('--scenario='))?.slice('--scenario='.length) ?? 'tool-call';
  const scenario = SCENARIOS.find((s) => s.id === scenarioId);
  if (!scenario) throw new Error(`no scenario ${scenarioId} (one of ${SCENARIOS.map((s) => s.id).join(', ')})`);
  const specs = args.filter((a) => !a.startsWith('--'));
  if (specs.length < 2) throw new Error('name at least two variants: label:NAME=value,... (the first is the base)');
  const options = benchOptions();
  const variants = specs.map((spec) => {
    const colon = spec.indexOf(':');
    if (colon < 1) throw new Error(`"${spec}" is not label:NAME=value,...`);
    const rest = spec.slice(colon + 1);
    const env = Object.fromEntries(
      (rest ? rest.split(',') : []).map((kv) => {
        const at = kv.indexOf('=');
        if (at < 1) throw new Error(`"${kv}" is not NAME=value`);
        return [kv.slice(0, at), kv.slice(at + 1)];
      }),
    );
    const label = spec.slice(0, colon);
    return { label, env, session: new BenchSession(options, { env, label: `variant-${label}` }) };
  });
  if (new Set(variants.map((v) => v.label)).size !== variants.length) throw new Error('two variants have the same label');
  const items: ThroughputItem[] = variants.map((v) => ({ scenario, session: v.session, id: v.label, name: v.label }));
  let failed = false;
  try {
    const result = await runItems(items, options);
    const [base] = result.rows;
    const fixed = (n: number | undefined, digits: number) => (n === undefined ? '-' : n.toFixed(digits));
    process.stdout.write(
      `\n${scenario.name}: ${variants.length} variants, ${options.connections} connections, ${options.rounds} interleaved rounds of ${options.duration}s\n`,
    );
    for (const row of result.rows) {
      const env = variants.find((v) => v.label === row.id)!.env;
      const rps = row.rounds.map((m, i) => m.rps / base.rounds[i].rps);
      const cpu = row.rounds.map((m, i) => (m.serverCpuMsPerUnit ?? NaN) / (base.rounds[i].serverCpuMsPerUnit ?? NaN));
      process.stdout.write(
        `${row.id.padEnd(16)} ${fixed(row.measurement.rps, 0).padStart(6)} req/s ${fixed(row.measurement.serverCpuMsPerUnit, 3)} ms CPU` +
          `  req/s ${fixed(row.measurement.rps / base.measurement.rps, 3)} (rounds: median ${fixed(median(rps), 3)}; ${rps.map((r) => r.toFixed(2)).join(' ')})` +
          `  CPU ${fixed((row.measurement.serverCpuMsPerUnit ?? NaN) / (base.measurement.serverCpuMsPerUnit ?? NaN), 3)} (rounds: median ${fixed(median(cpu), 3)})` +
          `  ${JSON.stringify(env)}\n`,
      );
    }
  } catch (err) {
    failed = true;
    process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  } finally {
    for (const v of variants) await v.session.close();
  }
  process.exit(failed ? 1 : 0);
}

void main();
