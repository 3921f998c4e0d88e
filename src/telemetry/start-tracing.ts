import { startTracing } from './tracing';

// Imported for its effect, first thing in the entry point: see tracing.ts for why it must run
// before anything else is loaded.
startTracing(process.env);
