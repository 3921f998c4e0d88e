import { Injectable } from '@nestjs/common';
import { DiscoveryService } from '@nestjs/core';
import type { DiscoverableDecorator } from '@nestjs/core/discovery/discovery-service';
import type { InstanceWrapper } from '@nestjs/core/injector/instance-wrapper';
import { McpServerEntry } from './mcp-server-entry.decorator';
import type { McpServerEntryDefinition } from './mcp-server-entry.types';

/** The one place that reads the entry decorator's metadata. */
@Injectable()
export class McpServerEntryAccessor {
  constructor(private readonly discovery: DiscoveryService) {}

  decoratedProviders(): InstanceWrapper[] {
    return this.discovery.getProviders({ metadataKey: McpServerEntry.KEY });
  }

  definitionOf(wrapper: InstanceWrapper): McpServerEntryDefinition {
    return this.discovery.getMetadataByDecorator(McpServerEntry as DiscoverableDecorator<McpServerEntryDefinition>, wrapper) as McpServerEntryDefinition;
  }
}
