import { join } from 'node:path';
import type { DataSourceOptions } from 'typeorm';

/**
 * One place that says how we talk to Postgres, shared by the app, the migration CLI and tests.
 * Entities are listed by glob so a feature only has to declare its entity to be mapped.
 */
export function dataSourceOptions(url: string, poolSize: number): DataSourceOptions {
  const root = join(__dirname, '..', '..');
  return {
    type: 'postgres',
    url,
    poolSize,
    // gen_random_uuid() is built in; PGlite cannot install extensions.
    installExtensions: false,
    synchronize: false,
    migrationsRun: false,
    migrationsTableName: 'migrations',
    migrationsTransactionMode: 'each',
    entities: [join(root, 'src', '**', '*.entity.{ts,js}')],
    migrations: [join(root, 'migrations', '*.{ts,js}')],
    extra: { max: poolSize, application_name: 'capability-platform' },
  };
}

/**
 * `options` whose connections end any statement past `ms` (PostgreSQL's statement_timeout, sent
 * when each connection starts): the API's pool, never the migrations' connection, whose index
 * builds may rightly take longer. Unset or 0: no limit.
 */
export function withStatementTimeout(options: DataSourceOptions, ms: number | undefined): DataSourceOptions {
  if (!ms) return options;
  return { ...options, extra: { ...(options.extra as Record<string, unknown>), statement_timeout: ms } } as DataSourceOptions;
}
