import { join } from 'node:path';

/** The repository root: servers are started from here, results are written under it. */
export const ROOT = join(__dirname, '..', '..');

function num(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value <= 0) throw new Error(`${name} must be a positive number (got ${JSON.stringify(raw)})`);
  return value;
}

/**
 * How hard and how long to push. The defaults keep `npm run bench` under five minutes on a
 * 2-core machine; every figure in one run is measured with the same settings.
 */
export interface BenchOptions {
  /** Seconds of measurement per round per scenario. */
  duration: number;
  /** Scenarios are measured in rounds, interleaved, so a burst of background load hits every row alike. */
  rounds: number;
  /** Seconds of unmeasured load before a scenario's first round (JIT, pools, caches). */
  warmup: number;
  connections: number;
  /** LOG_LEVEL of the product server. */
  serverLogLevel: string;
  /** Write bench/results/<date>.json. */
  save: boolean;
  /** Set: a PostgreSQL server; every run creates its own databases there and drops them. */
  databaseUrl?: string;
}

export function benchOptions(): BenchOptions {
  return {
    duration: num('BENCH_DURATION', 4),
    rounds: Math.round(num('BENCH_ROUNDS', 3)),
    warmup: num('BENCH_WARMUP', 2),
    connections: Math.round(num('BENCH_CONNECTIONS', 32)),
    serverLogLevel: process.env.BENCH_LOG_LEVEL || 'info',
    save: process.env.BENCH_SAVE !== '0',
    databaseUrl: process.env.DATABASE_URL || undefined,
  };
}

/** What a results file may say about the options: never the database URL (it can hold a password). */
export function publicOptions(options: BenchOptions): Omit<BenchOptions, 'databaseUrl'> & { database: 'embedded' | 'postgres' } {
  const { databaseUrl, ...rest } = options;
  return { ...rest, database: databaseUrl ? 'postgres' : 'embedded' };
}
