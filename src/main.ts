import './telemetry/start-tracing';
import 'reflect-metadata';
import { exitOnStartFailure, startServer } from './server';

startServer(process.env).catch(exitOnStartFailure);
