import { ModuleMetadata } from '@nestjs/common';
import { NestFastifyApplication } from '@nestjs/platform-fastify';
import type { Server } from 'node:http';
import { createApp } from './app.factory';
import { ConfigError } from './config/app-config';
import { loadConfig } from './config/config-loader';
import { openDatabase, runMigrations } from './database/database';
import { DataDirLockedError } from './database/embedded-database';
import { stopTracing } from './telemetry/tracing';
import { EventStreamService } from './events/event-stream.service';
import { writeStartLine } from './common/start-line';

const SHUTDOWN_GRACE_MS = 10_000;

export function say(message: string): void {
  writeStartLine(30, message);
}

/**
 * Starts the server as `npm start` does: environment, database (migrated), HTTP. Extra modules
 * are for test harnesses that need a server process with fixture capabilities.
 */
export async function startServer(
  env: NodeJS.ProcessEnv,
  imports: ModuleMetadata['imports'] = [],
  options: { envFile?: string } = {},
): Promise<NestFastifyApplication> {
  const { config, module: configModule } = await loadConfig(env, { envFile: options.envFile, log: say });
  const database = await openDatabase(config);
  if (database.embedded) say(`embedded database in ${config.dataDir} (set DATABASE_URL to use a PostgreSQL server)`);
  await runMigrations(database.url, say);
  const app = await createApp({ config, database, imports: [configModule, ...imports] });
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
    // An event stream never finishes by itself: end them now (not after the grace period); their
    // clients reconnect with Last-Event-ID to a node that is still up.
    app.get(EventStreamService).closeAll();
    // Keep-alive connections are closed as they become idle (app.factory.ts); whatever is still
    // open after the grace period is cut.
    const deadline = setTimeout(() => server.closeAllConnections(), SHUTDOWN_GRACE_MS);
    await closed;
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

/**
 * A failed start is one JSON line at level 60 (fatal), like every other log line, so a log
 * pipeline that parses the server's output sees why a node never came up. An operator's mistake
 * (a bad variable, a data directory in use) is its message; anything else carries the error.
 */
export function startFailureLine(err: unknown, now = Date.now()): string {
  const expected = err instanceof ConfigError || err instanceof DataDirLockedError;
  const message = err instanceof Error ? err.message : String(err);
  const line: Record<string, unknown> = { level: 60, time: now, msg: `cannot start: ${message}` };
  if (!expected && err instanceof Error) line.err = { type: err.name, message: err.message, stack: err.stack };
  return JSON.stringify(line) + '\n';
}

export function exitOnStartFailure(err: unknown): never {
  process.stderr.write(startFailureLine(err));
  process.exit(1);
}
