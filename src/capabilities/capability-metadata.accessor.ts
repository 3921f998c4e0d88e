import { Injectable } from '@nestjs/common';
import { DiscoveryService } from '@nestjs/core';
import type { DiscoverableDecorator } from '@nestjs/core/discovery/discovery-service';
import type { InstanceWrapper } from '@nestjs/core/injector/instance-wrapper';
import { Capability } from './capability.decorator';
import type { CapabilityDefinition } from './capability.types';

/** The one place that reads the decorator's metadata, so nothing else touches Reflect. */
@Injectable()
export class CapabilityMetadataAccessor {
  constructor(private readonly discovery: DiscoveryService) {}

  /** The providers carrying `@Capability()`, found through Nest's index (no scan of every provider). */
  decoratedProviders(): InstanceWrapper[] {
    return this.discovery.getProviders({ metadataKey: Capability.KEY });
  }

  /** What the decorator was given; the registry checks it, since nothing at runtime enforces the type. */
  definitionOf(wrapper: InstanceWrapper): CapabilityDefinition {
    return this.discovery.getMetadataByDecorator(Capability as DiscoverableDecorator<CapabilityDefinition>, wrapper) as CapabilityDefinition;
  }
}
