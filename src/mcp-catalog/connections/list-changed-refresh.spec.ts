import type { AppConfig } from '../../config/app-config';
import { McpClientPool } from './mcp-client-pool.service';
import { McpConnectionSync } from './mcp-connection-sync.service';
import type { McpConnectionsRepository } from './mcp-connections.repository';

/**
 * Attack round 21, AD-F3: a listing on a server's list_changed kept its client open, and once the
 * client was closed, the list_changed that came meanwhile had it listed, and so opened, again.
 */
describe('McpConnectionSync: listings on list_changed', () => {
  it('lists a connection again only while this node holds its client; never opens one for it', async () => {
    let changed: ((orgId: string, connectionId: string) => void) | undefined;
    const open = new Set(['held']);
    const pool = {
      onToolsChanged: (listener: (orgId: string, connectionId: string) => void) => {
        changed = listener;
        return () => undefined;
      },
      holds: (id: string) => open.has(id),
    } as unknown as McpClientPool;
    const read: string[] = [];
    const repository = {
      get: async (_orgId: string, id: string) => {
        read.push(id);
        return undefined;
      },
    } as unknown as McpConnectionsRepository;
    const sync = new McpConnectionSync(
      {} as never,
      repository,
      {} as never,
      pool,
      {} as never,
      {} as never,
      { mcpToolsTtlSeconds: 300 } as AppConfig,
      {} as never,
    );
    sync.onModuleInit();
    try {
      changed!('org', 'held');
      changed!('org', 'closed');
      await new Promise((resolve) => setImmediate(resolve));
      // Was ['held', 'closed']: the closed one listed, through a client opened for it.
      expect(read).toEqual(['held']);
    } finally {
      sync.onModuleDestroy();
    }
  });
});
