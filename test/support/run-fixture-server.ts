import 'reflect-metadata';
import { exitOnStartFailure, startServer } from '../../src/server';
import { RunFixturesModule } from '../fixtures/run-fixtures.module';

/** The real server process with the run fixtures, for suites that run several nodes and kill one. */
startServer(process.env, [RunFixturesModule]).catch(exitOnStartFailure);
