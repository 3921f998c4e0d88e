import { BasicTracerProvider } from '@opentelemetry/sdk-trace-base';
import { createInterface } from 'node:readline';
import { encodeOnEndProcessorsFromEnv } from '../../src/telemetry/encode-on-end';

/**
 * A process that exports spans through the processors the product makes from its OTEL_*
 * variables (src/telemetry/encode-on-end.spec.ts): the OTLP exporter loads node:http with a dynamic
 * import, which Jest's module system does not run, so the export is tested from a process of its own.
 *
 * Ends `SPANS` spans, each with an attribute set after its end (never exported); then on a line
 * `flush` on stdin it flushes, writes `flushed`, shuts down and exits.
 */
const processors = encodeOnEndProcessorsFromEnv();
if (!processors) throw new Error('the environment names no OTLP/protobuf export');
const tracer = new BasicTracerProvider({ spanProcessors: processors }).getTracer('encode-on-end-child');
for (let i = 0; i < Number(process.env.SPANS); i++) {
  const span = tracer.startSpan(`span ${i}`, { attributes: { i } });
  span.end();
  span.setAttribute('after.end', true);
}
process.stdout.write('ended\n');
createInterface({ input: process.stdin }).on('line', (line) => {
  if (line !== 'flush') return;
  void processors[0]
    .forceFlush()
    .then(() => process.stdout.write('flushed\n'))
    .then(() => processors[0].shutdown())
    .then(() => process.exit(0));
});
