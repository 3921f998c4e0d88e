import type { AppConfig } from '../../config/app-config';
import { McpClientPool } from './mcp-client-pool.service';
import { LIST_CHANGED_MAX_INTERVAL_MS, LIST_CHANGED_PER_ORG, McpConnectionSync } from './mcp-connection-sync.service';
import type { McpConnectionsRepository } from './mcp-connections.repository';

/**
 * A sync whose pool holds the clients `holds` says, and whose repository records every connection
 * a listing read (`orgId/connectionId`); `changed` is what the pool calls on a server's list_changed.
 */
function syncOn(holds: (connectionId: string) => boolean) {
  let changed: ((orgId: string, connectionId: string) => void) | undefined;
  const pool = {
    onToolsChanged: (listener: (orgId: string, connectionId: string) => void) => {
      changed = listener;
      return () => undefined;
    },
    holds,
  } as unknown as McpClientPool;
  const read: string[] = [];
  const repository = {
    get: async (orgId: string, id: string) => {
      read.push(`${orgId}/${id}`);
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
  return { sync, read, changed: (orgId: string, connectionId: string) => changed!(orgId, connectionId) };
}

describe('McpConnectionSync: listings on list_changed', () => {
  /**
   * Attack round 21, AD-F3: a listing on a server's list_changed kept its client open, and once the
   * client was closed, the list_changed that came meanwhile had it listed, and so opened, again.
   */
  it('lists a connection again only while this node holds its client; never opens one for it', async () => {
    const { sync, read, changed } = syncOn((id) => id === 'held');
    try {
      changed('org', 'held');
      changed('org', 'closed');
      await new Promise((resolve) => setImmediate(resolve));
      // Was ['org/held', 'org/closed']: the closed one listed, through a client opened for it.
      expect(read).toEqual(['org/held']);
    } finally {
      sync.onModuleDestroy();
    }
  });

  it("lists one organization's connections at most LIST_CHANGED_PER_ORG times a window on a node; the rest when it frees, another organization's at once", async () => {
    jest.useFakeTimers();
    const { sync, read, changed } = syncOn(() => true);
    const settle = async () => {
      for (let i = 0; i < 5; i++) await Promise.resolve();
    };
    try {
      // 50 connections of one organization, each once: was 50 listings at once.
      for (let c = 0; c < 50; c++) changed('busy', `c${c}`);
      changed('other', 'c0');
      await settle();
      expect(read.filter((r) => r.startsWith('busy/'))).toHaveLength(LIST_CHANGED_PER_ORG);
      expect(read).toContain('other/c0');
      // A connection waiting for the budget is not listed twice for more notices meanwhile.
      changed('busy', 'c49');
      jest.advanceTimersByTime(LIST_CHANGED_MAX_INTERVAL_MS);
      await settle();
      expect(read.filter((r) => r.startsWith('busy/'))).toHaveLength(2 * LIST_CHANGED_PER_ORG);
      jest.advanceTimersByTime(4 * LIST_CHANGED_MAX_INTERVAL_MS);
      await settle();
      const busy = read.filter((r) => r.startsWith('busy/'));
      expect(busy).toHaveLength(50);
      expect(new Set(busy).size).toBe(50);
    } finally {
      sync.onModuleDestroy();
      jest.useRealTimers();
    }
  });
});
