import { Injectable } from '@nestjs/common';
import { McpServerEntryAccessor } from './mcp-server-entry.accessor';
import type { McpServerEntryDefinition } from './mcp-server-entry.types';

export interface DiscoveredEntry {
  definition: McpServerEntryDefinition;
  className: string;
}

/** Walks the decorated providers once, at boot (like CapabilityExplorer). */
@Injectable()
export class McpServerEntryExplorer {
  constructor(private readonly accessor: McpServerEntryAccessor) {}

  explore(): { found: DiscoveredEntry[]; problems: string[] } {
    const found: DiscoveredEntry[] = [];
    const problems: string[] = [];
    for (const wrapper of this.accessor.decoratedProviders()) {
      const className = String(wrapper.name);
      if (!wrapper.isDependencyTreeStatic() || wrapper.isTransient) {
        problems.push(`${className}: an MCP catalog entry must be a static singleton provider`);
        continue;
      }
      found.push({ definition: this.accessor.definitionOf(wrapper), className });
    }
    return { found, problems };
  }
}
