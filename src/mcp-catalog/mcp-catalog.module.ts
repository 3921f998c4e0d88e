import { Module } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { McpClientPool } from './connections/mcp-client-pool.service';
import { McpConnectionSync } from './connections/mcp-connection-sync.service';
import { McpConnectionsRepository } from './connections/mcp-connections.repository';
import { McpConnectionsService } from './connections/mcp-connections.service';
import { StoredToolLists } from './connections/stored-tool-lists';
import { McpCatalogEntriesModule } from './entries/entries.module';
import { McpConnectionsController, McpServersController } from './mcp-catalog.controller';
import { McpServerEntryAccessor } from './mcp-server-entry.accessor';
import { McpServerEntryExplorer } from './mcp-server-entry.explorer';
import { McpServerRegistry } from './mcp-server-registry.service';

/** Vendor MCP servers as governed tools: the catalog (entries as code) and organizations' connections. */
@Module({
  imports: [DiscoveryModule, McpCatalogEntriesModule],
  controllers: [McpServersController, McpConnectionsController],
  providers: [
    McpServerEntryAccessor,
    McpServerEntryExplorer,
    McpServerRegistry,
    McpClientPool,
    McpConnectionsRepository,
    McpConnectionsService,
    McpConnectionSync,
    StoredToolLists,
  ],
  exports: [McpServerRegistry, McpConnectionsService, McpConnectionSync, McpClientPool],
})
export class McpCatalogModule {}
