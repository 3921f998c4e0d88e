import { ModuleMetadata } from '@nestjs/common';
import { NestFastifyApplication } from '@nestjs/platform-fastify';
import type { Server } from 'node:http';
import { createApp } from './app.factory';
import { ConfigError } from './config/app-config';
import { resolveConfig } from './config/resolve-config';
import { openDatabase, runMigrations } from './database/database';
import { DataDirLockedError } from './database/embedded-database';
import { stopTracing } from './telemetry/tracing';

const SHUTDOWN_GRACE_MS = 10_000;

export function say(message: string): void {
  process.stdout.write(JSON.stringify({ level: 30, time: Date.now(), msg: message }) + '\n');
}

/**
 * Starts the server as `npm start` does: environment, database (migrated), HTTP. Extra modules
 * are for test harnesses that need a server process with fixture capabilities.
 */
export async function startServer(env: NodeJS.ProcessEnv, imports: ModuleMetadata['imports'] = []): Promise<NestFastifyApplication> {
  const config = resolveConfig(env, say);
  const database = await openDatabase(config);
  if (database.embedded) say(`embedded database in ${config.dataDir} (set DATABASE_URL to use a PostgreSQL server)`);
  await runMigrations(database.url, say);
  const app = await createApp({ config, database, imports });
  await app.listen(config.port, config.host);
  const address = app.getHttpServer().address();
  const port = typeof address === 'object' && address ? address.port : config.port;
  say(`listening on http://${config.host}:${port} (docs at /api/docs)`);

  // Graceful stop, in order: stop accepting and let in-flight requests finish, then close the
  // pool, then the embedded database under it.
  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    say(`${signal}: finishing in-flight requests`);
    const server = app.getHttpServer() as Server;
    const closed = app.getHttpAdapter().getInstance().close();
    // Keep-alive connections that are idle (or become idle once their request is answered) are
    // closed as they appear; whatever is still open after the grace period is cut.
    const reaper = setInterval(() => server.closeIdleConnections(), 50);
    const deadline = setTimeout(() => server.closeAllConnections(), SHUTDOWN_GRACE_MS);
    await closed;
    clearInterval(reaper);
    clearTimeout(deadline);
    await app.close();
    await database.embedded?.stop();
    await stopTracing().catch((err: Error) => say(`traces not flushed: ${err.message}`));
    say('stopped');
    process.exit(0);
  };
  process.once('SIGTERM', () => void stop('SIGTERM'));
  process.once('SIGINT', () => void stop('SIGINT'));
  return app;
}

export function exitOnStartFailure(err: unknown): never {
  if (err instanceof ConfigError || err instanceof DataDirLockedError) {
    process.stderr.write(`cannot start: ${err.message}\n`);
  } else {
    process.stderr.write(`cannot start: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  }
  process.exit(1);
}
