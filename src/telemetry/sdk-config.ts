import { diag } from '@opentelemetry/api';
import { getNumberFromEnv, getStringFromEnv, getStringListFromEnv } from '@opentelemetry/core';
import {
  defaultResource,
  detectResources,
  envDetector,
  hostDetector,
  osDetector,
  processDetector,
  Resource,
  ResourceDetector,
  resourceFromAttributes,
  serviceInstanceIdDetector,
} from '@opentelemetry/resources';
import { AlwaysOffSampler, AlwaysOnSampler, ParentBasedSampler, Sampler, SpanLimits, TraceIdRatioBasedSampler } from '@opentelemetry/sdk-trace';

/**
 * What `@opentelemetry/sdk-node` 0.223 reads from the OTEL_* variables for a tracer provider: the
 * sampler, the span limits and the resource, read the same way (create-from-env.js and sdk.js of
 * that package, which does not export them), for the provider the product records spans with
 * (recording-tracer.ts). sdk-config.spec.ts compares each with the package's own for every value
 * the specification names, so an upgrade that changes them fails there.
 */

/** OTEL_TRACES_SAMPLER and OTEL_TRACES_SAMPLER_ARG; parent-based always-on when unset or unknown. */
export function samplerFromEnv(): Sampler {
  const name = getStringFromEnv('OTEL_TRACES_SAMPLER');
  switch (name) {
    case undefined:
      return new ParentBasedSampler({ root: new AlwaysOnSampler() });
    case 'always_on':
      return new AlwaysOnSampler();
    case 'always_off':
      return new AlwaysOffSampler();
    case 'parentbased_always_on':
      return new ParentBasedSampler({ root: new AlwaysOnSampler() });
    case 'parentbased_always_off':
      return new ParentBasedSampler({ root: new AlwaysOffSampler() });
    case 'traceidratio':
      return new TraceIdRatioBasedSampler(ratioFromEnv());
    case 'parentbased_traceidratio':
      return new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(ratioFromEnv()) });
    default:
      diag.error(`unknown OTEL_TRACES_SAMPLER value "${name}", using default`);
      return new ParentBasedSampler({ root: new AlwaysOnSampler() });
  }
}

function ratioFromEnv(): number {
  const ratio = getNumberFromEnv('OTEL_TRACES_SAMPLER_ARG');
  if (ratio == null) {
    diag.error('OTEL_TRACES_SAMPLER_ARG is blank, defaulting to 1.');
    return 1;
  }
  if (ratio < 0 || ratio > 1) {
    diag.error(`OTEL_TRACES_SAMPLER_ARG=${ratio} was given, but it is out of range ([0..1]), defaulting to 1.`);
    return 1;
  }
  return ratio;
}

/** The OTEL_SPAN_* and OTEL_ATTRIBUTE_* limits; unset ones are the provider's defaults. */
export function spanLimitsFromEnv(): SpanLimits {
  return {
    attributeCountLimit: getNumberFromEnv('OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT') ?? getNumberFromEnv('OTEL_ATTRIBUTE_COUNT_LIMIT'),
    attributeValueLengthLimit: getNumberFromEnv('OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT') ?? getNumberFromEnv('OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT'),
    eventCountLimit: getNumberFromEnv('OTEL_SPAN_EVENT_COUNT_LIMIT'),
    linkCountLimit: getNumberFromEnv('OTEL_SPAN_LINK_COUNT_LIMIT'),
    attributePerEventCountLimit: getNumberFromEnv('OTEL_SPAN_ATTRIBUTE_PER_EVENT_COUNT_LIMIT'),
    attributePerLinkCountLimit: getNumberFromEnv('OTEL_SPAN_ATTRIBUTE_PER_LINK_COUNT_LIMIT'),
  };
}

const DETECTORS: Record<string, ResourceDetector> = {
  host: hostDetector,
  os: osDetector,
  serviceinstance: serviceInstanceIdDetector,
  process: processDetector,
  env: envDetector,
};

/** OTEL_NODE_RESOURCE_DETECTORS: when set, `all` (every one), `none`, or a list; unset: env, process, host. */
function detectorsFromEnv(): ResourceDetector[] {
  if (!getStringFromEnv('OTEL_NODE_RESOURCE_DETECTORS')) return [envDetector, processDetector, hostDetector];
  const named = getStringListFromEnv('OTEL_NODE_RESOURCE_DETECTORS') ?? ['all'];
  if (named.includes('all')) return Object.values(DETECTORS);
  if (named.includes('none')) return [];
  return named.flatMap((name) => {
    const detector = Object.prototype.hasOwnProperty.call(DETECTORS, name) ? DETECTORS[name] : undefined;
    if (!detector) diag.warn(`Invalid resource detector "${name}" specified in the environment variable OTEL_NODE_RESOURCE_DETECTORS`);
    return detector ?? [];
  });
}

/** The resource the SDK would describe this process with; `serviceName` as NodeSDK's option of that name. */
export function resourceFromEnv(serviceName?: string): Resource {
  const resource = defaultResource().merge(detectResources({ detectors: detectorsFromEnv() }));
  return serviceName === undefined ? resource : resource.merge(resourceFromAttributes({ 'service.name': serviceName }));
}
