import { Injectable } from '@nestjs/common';
import { CapabilityMetadataAccessor } from './capability-metadata.accessor';
import type { CapabilityDefinition, CapabilityProvider } from './capability.types';

export interface DiscoveredCapability {
  definition: CapabilityDefinition;
  provider: CapabilityProvider;
  /** The provider's class name, to name the culprit when the declaration is refused. */
  className: string;
}

export interface ExploreResult {
  found: DiscoveredCapability[];
  problems: string[];
}

/**
 * Walks the decorated providers once, at boot. Nest indexes them by class while it scans the
 * modules, so only class providers are found: aliases (`useExisting`) and factory-made instances
 * never show up (a test pins this). A provider that is not a static singleton is refused: the
 * registry holds one instance for the life of the process and would silently bypass its scope.
 */
@Injectable()
export class CapabilityExplorer {
  constructor(private readonly accessor: CapabilityMetadataAccessor) {}

  explore(): ExploreResult {
    const found: DiscoveredCapability[] = [];
    const problems: string[] = [];
    for (const wrapper of this.accessor.decoratedProviders()) {
      const className = String(wrapper.name);
      if (!wrapper.isDependencyTreeStatic() || wrapper.isTransient) {
        problems.push(`${className}: a capability provider must be a static singleton (it is request-scoped or transient, or depends on such a provider)`);
        continue;
      }
      const provider = wrapper.instance as Partial<CapabilityProvider> | undefined;
      if (typeof provider?.build !== 'function') {
        problems.push(`${className}: a capability provider must have a build(ctx) method`);
        continue;
      }
      found.push({ definition: this.accessor.definitionOf(wrapper), provider: provider as CapabilityProvider, className });
    }
    return { found, problems };
  }
}
