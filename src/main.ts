import 'reflect-metadata';
import { createApp } from './app.factory';
import { ConfigError } from './config/app-config';
import { resolveConfig } from './config/resolve-config';
import { openDatabase, runMigrations } from './database/database';
import { DataDirLockedError } from './database/embedded-database';

async function main(): Promise<void> {
  const say = (message: string) => process.stdout.write(JSON.stringify({ level: 30, time: Date.now(), msg: message }) + '\n');
  const config = resolveConfig(process.env, say);
  const database = await openDatabase(config);
  if (database.embedded) say(`embedded database in ${config.dataDir} (set DATABASE_URL to use a PostgreSQL server)`);
  await runMigrations(database.url);
  const app = await createApp({ config, database });
  await app.listen(config.port, config.host);
  say(`listening on http://${config.host}:${config.port} (docs at /api/docs)`);

  // Graceful stop, in order: stop accepting and let in-flight requests finish, then close the
  // pool, then the embedded database under it.
  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    say(`${signal}: finishing in-flight requests`);
    await app.getHttpAdapter().getInstance().close();
    await app.close();
    await database.embedded?.stop();
    say('stopped');
    process.exit(0);
  };
  process.once('SIGTERM', () => void stop('SIGTERM'));
  process.once('SIGINT', () => void stop('SIGINT'));
}

main().catch((err: unknown) => {
  if (err instanceof ConfigError || err instanceof DataDirLockedError) {
    process.stderr.write(`cannot start: ${err.message}\n`);
  } else {
    process.stderr.write(`cannot start: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  }
  process.exit(1);
});
