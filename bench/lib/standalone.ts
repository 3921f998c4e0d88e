import { benchOptions, publicOptions } from './options';
import { saveResults, machine } from './report';
import { BenchSession } from './session';
import { printThroughput, runThroughput, ThroughputScenario } from './throughput';

/** `node -r @swc-node/register bench/scenarios/<id>.ts`: one or a few scenarios, with their own servers. */
export async function runStandalone(title: string, scenarios: ThroughputScenario[]): Promise<void> {
  const session = new BenchSession(benchOptions());
  let failed = false;
  try {
    const database = await session.databaseVersion();
    const result = await runThroughput(session, scenarios);
    printThroughput(`${title} — ${database}, ${session.options.connections} connections`, result);
    if (session.options.save) {
      const file = saveResults(
        { date: new Date().toISOString(), machine: machine(), database, options: publicOptions(session.options), throughput: result },
        `${session.mode}-${scenarios.map((s) => s.id).join('+')}`,
      );
      process.stdout.write(`\nresults: ${file}\n`);
    }
  } catch (err) {
    failed = true;
    process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  } finally {
    await session.close();
  }
  process.exit(failed ? 1 : 0);
}
