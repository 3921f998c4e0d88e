import './telemetry/start-tracing';
import 'reflect-metadata';
import { exitOnStartFailure, startServer } from './server';

// `.env` in the working directory, when there is one (see .env.example); the process's own
// variables win over it.
startServer(process.env, [], { envFile: '.env' }).catch(exitOnStartFailure);
