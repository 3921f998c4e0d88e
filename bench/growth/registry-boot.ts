import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { ROOT } from '../lib/options';
import { fixed, printTable, Table } from '../lib/report';

const run = promisify(execFile);

export interface RegistrySize {
  count: number;
  capabilities: number;
  bootMs: number;
  registryLoadMs: number;
  heapDeltaBytes: number;
  rssBytes: number;
  catalogBytes: number;
  catalogRequestMs: number;
  validationMs: number;
}

export const REGISTRY_SIZES = [0, 10, 100, 1000];

/** Each size in a fresh process: boot time, memory, and what the catalog and one validation cost at that size. */
export async function measureRegistryGrowth(sizes = REGISTRY_SIZES): Promise<RegistrySize[]> {
  const out: RegistrySize[] = [];
  for (const count of sizes) {
    process.stderr.write(`[bench] registry with ${count} synthetic capabilities\n`);
    const { stdout } = await run(process.execPath, ['--expose-gc', '-r', '@swc-node/register', 'bench/growth/registry-boot-child.ts', String(count)], {
      cwd: ROOT,
      maxBuffer: 1 << 20,
    });
    out.push(JSON.parse(stdout.trim().split('\n').pop()!) as RegistrySize);
  }
  return out;
}

export function registryTable(sizes: readonly RegistrySize[]): Table {
  const mib = (b: number) => fixed(b / 2 ** 20, 1);
  return {
    title: 'Registry growth: synthetic capabilities (2 tools, 3 config fields each) on top of the builtins',
    columns: ['synthetic', 'Nest boot ms', 'registry load ms', 'heap +MiB', 'rss MiB', 'catalog KiB', 'catalog answer ms', 'one validation ms'],
    rows: sizes.map((s) => [
      s.count,
      fixed(s.bootMs, 0),
      fixed(s.registryLoadMs, 1),
      mib(s.heapDeltaBytes),
      mib(s.rssBytes),
      fixed(s.catalogBytes / 1024, 0),
      fixed(s.catalogRequestMs, 3),
      fixed(s.validationMs, 3),
    ]),
    notes: [
      'Nest boot: createApplicationContext + init of the capability framework with these modules (no database, no HTTP).',
      'registry load: a fresh registry over the same providers (explore, check, generate every JSON Schema, build the catalog).',
      'heap: after a forced GC, against the same process before the modules were generated.',
      'catalog answer: making one answer of GET /agents/capabilities (view with `available`, JSON, ETag); the route makes each once per filter and set of scopes.',
      "one validation: class-validator on a 2-field class (its rules are found through the class's prototype chain, src/common/validation-metadata-index.ts, so it no longer grows with the classes the process holds).",
    ],
  };
}

if (require.main === module) {
  measureRegistryGrowth()
    .then((sizes) => printTable(registryTable(sizes)))
    .catch((err: unknown) => {
      process.stderr.write(`${(err as Error).stack}\n`);
      process.exit(1);
    });
}
