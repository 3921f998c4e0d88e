import { readFileSync } from 'node:fs';
import { publishTable, PublishSize } from './growth/publish-validation';
import { registryTable, RegistrySize } from './growth/registry-boot';
import { RowLevel, rowsTable } from './growth/tool-call-rows';
import { formatTable, ThroughputRow, throughputTable } from './lib/report';

/**
 * `node -r @swc-node/register bench/print-results.ts bench/results/<file>.json`: the tables of a
 * saved run again, without the notes (docs/benchmarks.md quotes them this way).
 */
function main(): void {
  const file = process.argv[2];
  if (!file) throw new Error('usage: print-results.ts <results.json>');
  const r = JSON.parse(readFileSync(file, 'utf8')) as {
    throughput?: { rows: ThroughputRow[]; checks?: { what: string; value: number; target: string }[] };
    toolCallRows?: RowLevel[];
    registry?: RegistrySize[];
    publish?: PublishSize[];
  };
  const out: string[] = [];
  const bare = (t: ReturnType<typeof throughputTable>) => formatTable({ ...t, title: '', notes: [] }).replace(/^\n/, '');
  if (r.throughput) {
    out.push(bare(throughputTable('', r.throughput.rows)));
    for (const c of r.throughput.checks ?? []) out.push(`${c.what}: ${c.value.toFixed(2)} (target ${c.target})`);
  }
  if (Array.isArray(r.toolCallRows)) out.push(bare(rowsTable(r.toolCallRows)));
  if (r.registry) out.push(bare(registryTable(r.registry)));
  if (r.publish) out.push(bare(publishTable(r.publish)));
  process.stdout.write(out.join('\n\n') + '\n');
}

main();
