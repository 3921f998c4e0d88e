import '../../src/telemetry/start-tracing';
import 'reflect-metadata';
import { exitOnStartFailure, startServer } from '../../src/server';
import { CrashFixturesModule } from '../fixtures/crash-fixtures.module';

/** The real server process with test-only capabilities, for suites that kill and restart it. */
startServer(process.env, [CrashFixturesModule]).catch(exitOnStartFailure);
