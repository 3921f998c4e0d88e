import type { CustomDecorator } from '@nestjs/common';
import { DiscoveryService } from '@nestjs/core';
import type { McpServerEntryDefinition } from './mcp-server-entry.types';

/**
 * Registers the decorated provider as an MCP catalog entry. One provider per entry, in
 * `entries/<id>/<id>.entry.ts`; the registry finds it at boot through Nest's discovery and refuses
 * the boot when the declaration is malformed (see McpServerRegistry).
 */
export const McpServerEntry: ((definition: McpServerEntryDefinition) => CustomDecorator) & { KEY: string } =
  DiscoveryService.createDecorator<McpServerEntryDefinition>();
