import { AlwaysOnSampler, ParentBasedSampler, Sampler, SpanLimits } from '@opentelemetry/sdk-trace';
import { Resource } from '@opentelemetry/resources';
import { resourceFromEnv, samplerFromEnv, spanLimitsFromEnv } from './sdk-config';

/* eslint-disable @typescript-eslint/no-require-imports */
// The package's own readings, which it does not export: compared here so that an upgrade that
// changes them fails this test instead of changing what an operator's variables mean.
const fromSdk = require('@opentelemetry/sdk-node/build/src/create-from-env') as {
  createSamplerFromEnv(): Sampler | undefined;
  createSpanLimitsFromEnv(): SpanLimits;
};
const sdkUtils = require('@opentelemetry/sdk-node/build/src/utils') as { getResourceDetectorsFromEnv(): unknown[] };
const { defaultResource, detectResources, envDetector, processDetector, hostDetector, resourceFromAttributes } =
  require('@opentelemetry/resources') as typeof import('@opentelemetry/resources');
/* eslint-enable @typescript-eslint/no-require-imports */

describe('the OTEL_* readings the recording tracer provider shares with sdk-node', () => {
  const saved = { ...process.env };
  const only = (env: Record<string, string>) => {
    for (const k of Object.keys(process.env)) if (k.startsWith('OTEL_')) delete process.env[k];
    Object.assign(process.env, env);
  };
  afterEach(() => only(Object.fromEntries(Object.entries(saved).filter(([k]) => k.startsWith('OTEL_'))) as Record<string, string>));

  it('makes the sampler sdk-node makes, for every value the specification names and some it does not', () => {
    const cases: Record<string, string>[] = [
      {},
      { OTEL_TRACES_SAMPLER: 'always_on' },
      { OTEL_TRACES_SAMPLER: 'always_off' },
      { OTEL_TRACES_SAMPLER: 'parentbased_always_on' },
      { OTEL_TRACES_SAMPLER: 'parentbased_always_off' },
      { OTEL_TRACES_SAMPLER: 'traceidratio', OTEL_TRACES_SAMPLER_ARG: '0.25' },
      { OTEL_TRACES_SAMPLER: 'traceidratio' },
      { OTEL_TRACES_SAMPLER: 'traceidratio', OTEL_TRACES_SAMPLER_ARG: '7' },
      { OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '0.1' },
      { OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: 'nope' },
      { OTEL_TRACES_SAMPLER: ' parentbased_always_off ' },
      { OTEL_TRACES_SAMPLER: 'jaeger_remote' },
      { OTEL_TRACES_SAMPLER: '' },
    ];
    for (const env of cases) {
      only(env);
      const theirs = fromSdk.createSamplerFromEnv() ?? new ParentBasedSampler({ root: new AlwaysOnSampler() });
      expect([env, samplerFromEnv().toString()]).toEqual([env, theirs.toString()]);
    }
  });

  it('reads the span limits sdk-node reads', () => {
    const cases: Record<string, string>[] = [
      {},
      { OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT: '1024' },
      { OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT: '10', OTEL_ATTRIBUTE_COUNT_LIMIT: '3' },
      { OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT: '5', OTEL_ATTRIBUTE_COUNT_LIMIT: '3', OTEL_SPAN_EVENT_COUNT_LIMIT: '0', OTEL_SPAN_LINK_COUNT_LIMIT: 'x' },
      { OTEL_SPAN_ATTRIBUTE_PER_EVENT_COUNT_LIMIT: '2', OTEL_SPAN_ATTRIBUTE_PER_LINK_COUNT_LIMIT: '-1' },
    ];
    for (const env of cases) {
      only(env);
      expect([env, spanLimitsFromEnv()]).toEqual([env, fromSdk.createSpanLimitsFromEnv()]);
    }
  });

  it('describes the process as NodeSDK does, with the detectors OTEL_NODE_RESOURCE_DETECTORS names', async () => {
    const attributesOf = async (r: Resource) => {
      await r.waitForAsyncAttributes?.();
      return r.attributes;
    };
    for (const env of [
      {},
      { OTEL_NODE_RESOURCE_DETECTORS: 'all' },
      { OTEL_NODE_RESOURCE_DETECTORS: 'none' },
      { OTEL_NODE_RESOURCE_DETECTORS: 'env,host,bogus' },
    ] as Record<string, string>[]) {
      only({ ...env, OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment.name=test', OTEL_SERVICE_NAME: 'from-env' });
      // As NodeSDK's start() does it (sdk.js): the default resource, what the detectors find, the service name option.
      const detectors = 'OTEL_NODE_RESOURCE_DETECTORS' in env ? sdkUtils.getResourceDetectorsFromEnv() : [envDetector, processDetector, hostDetector];
      const theirs = defaultResource().merge(detectResources({ detectors: detectors as never }));
      const ours = resourceFromEnv();
      const a = await attributesOf(ours);
      const b = await attributesOf(theirs);
      // service.instance.id is random per detection when its detector runs.
      expect({ ...a, 'service.instance.id': typeof a['service.instance.id'] }).toEqual({ ...b, 'service.instance.id': typeof b['service.instance.id'] });
      const named = await attributesOf(resourceFromEnv('capability-platform'));
      const theirsNamed = await attributesOf(theirs.merge(resourceFromAttributes({ 'service.name': 'capability-platform' })));
      expect(named['service.name']).toBe(theirsNamed['service.name']);
    }
  });
});
