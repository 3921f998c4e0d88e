import 'reflect-metadata';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DataSource } from 'typeorm';
import { AppConfig, ConfigError, parseEnvironment } from '../config/app-config';
import { resolveSecrets } from '../config/resolve-config';
import { SecretsService } from '../secrets/secrets.service';
import { dataSourceOptions } from './data-source-options';
import { openDatabase, revertLastMigration, runMigrations } from './database';
import { describeReseal, remainingCount, resealSecrets } from './reseal-secrets';
import { startEmbeddedDatabase } from './embedded-database';

/**
 * `npm run secrets:reseal`: seals again under SECRETS_KEY every stored secret another key sealed
 * (SECRETS_KEY_PREVIOUS opens them), reports how many, and how many remain under another key
 * (exit status 2 while any do). Safe beside running nodes (docs/operations.md, "Rotating SECRETS_KEY").
 *
 * `npm run migration:run | migration:revert | migration:create <name> | migration:generate <name>`.
 * run and revert act on DATABASE_URL, or on the embedded database in DATA_DIR (stop the server
 * first: the data directory is locked while it runs). generate diffs the TypeORM entities against
 * a throwaway in-memory database migrated to the latest schema, so it needs no server either.
 */
async function main(): Promise<void> {
  const [command, name] = process.argv.slice(2);
  const env = parseEnvironment(process.env);
  switch (command) {
    case 'run':
    case 'revert': {
      const db = await openDatabase({ databaseUrl: env.DATABASE_URL, dataDir: env.DATA_DIR, databasePoolSize: 1 });
      try {
        if (command === 'run') {
          const done = await runMigrations(db.url, console.log);
          console.log(done.length ? `applied: ${done.map((m) => m.name).join(', ')}` : 'schema is up to date');
        } else {
          await revertLastMigration(db.url, console.log);
          console.log('reverted the last migration');
        }
      } finally {
        await db.embedded?.stop();
      }
      return;
    }
    case 'reseal': {
      const secrets = new SecretsService({ secrets: resolveSecrets(env, console.log) } as AppConfig);
      const db = await openDatabase({ databaseUrl: env.DATABASE_URL, dataDir: env.DATA_DIR, databasePoolSize: 1 });
      const ds = new DataSource({ ...dataSourceOptions(db.url, 1), entities: [] });
      try {
        await ds.initialize();
        const report = await resealSecrets(ds, secrets);
        console.log(describeReseal(report, secrets.currentKeyId));
        // A script (or an operator) about to drop SECRETS_KEY_PREVIOUS checks this.
        if (remainingCount(report) > 0) process.exitCode = 2;
      } finally {
        if (ds.isInitialized) await ds.destroy();
        await db.embedded?.stop();
      }
      return;
    }
    case 'create':
      writeMigration(requireName(name), ['-- write the change here'], ['-- undo it here']);
      return;
    case 'generate': {
      const migrationName = requireName(name);
      const embedded = await startEmbeddedDatabase(mkdtempSync(join(tmpdir(), 'migration-generate-')));
      const ds = new DataSource(dataSourceOptions(embedded.url, 1));
      await ds.initialize();
      try {
        await ds.runMigrations({ transaction: 'each' });
        const sql = await ds.driver.createSchemaBuilder().log();
        if (sql.upQueries.length === 0) {
          console.log('no changes: the entities match the migrated schema');
          return;
        }
        writeMigration(
          migrationName,
          sql.upQueries.map((q) => q.query),
          sql.downQueries.reverse().map((q) => q.query),
        );
      } finally {
        await ds.destroy();
        await embedded.stop();
      }
      return;
    }
    default:
      throw new ConfigError('usage: cli.ts run | revert | reseal | create <name> | generate <name>');
  }
}

function requireName(name: string | undefined): string {
  if (!name || !/^[a-z][a-z0-9-]*$/.test(name)) throw new ConfigError('give the migration a kebab-case name, e.g. add-agent-tags');
  return name;
}

function writeMigration(name: string, up: string[], down: string[]): void {
  const ts = Date.now();
  const className = name.replace(/(^|-)([a-z0-9])/g, (_m, _d, c: string) => c.toUpperCase()) + ts;
  const body = (queries: string[]) =>
    queries.map((q) => (q.startsWith('--') ? `    ${q.replace('--', '//')}` : `    await q.query(${JSON.stringify(q)});`)).join('\n');
  const file = join(__dirname, '..', '..', 'migrations', `${ts}-${name}.ts`);
  writeFileSync(
    file,
    `import { MigrationInterface, QueryRunner } from 'typeorm';\n\nexport class ${className} implements MigrationInterface {\n  name = '${className}';\n\n  async up(q: QueryRunner): Promise<void> {\n${body(up)}\n  }\n\n  async down(q: QueryRunner): Promise<void> {\n${body(down)}\n  }\n}\n`,
  );
  console.log(`wrote ${file}`);
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
