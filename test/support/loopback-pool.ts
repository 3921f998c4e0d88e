import type { Server } from 'node:http';
import type { AppConfig } from '../../src/config/app-config';
import { EgressService } from '../../src/egress/egress.service';
import { McpClientPool, McpTarget } from '../../src/mcp-catalog/connections/mcp-client-pool.service';
import type { RegisteredMcpServer } from '../../src/mcp-catalog/mcp-server-registry.service';
import { testConfig } from './test-app';

/**
 * An McpClientPool whose outbound connections may reach loopback only, for the specs that talk to
 * an MCP server of their own making (one that misbehaves in a way the fixture server cannot), and
 * the targets they hand it.
 */
export class LoopbackPool {
  readonly egress: EgressService;
  readonly pool: McpClientPool;
  private connections = 0;

  constructor(requestTimeoutMs: number, overrides: Partial<AppConfig> = {}) {
    const config = testConfig({ egress: { allowedHosts: ['127.0.0.1'], connectTimeoutMs: 1000, requestTimeoutMs }, ...overrides });
    this.egress = new EgressService(config);
    this.pool = new McpClientPool(this.egress, config);
  }

  /** A connection of the catalog's `remote` entry at `url`, with no credentials: a new connection id each time, unless named. */
  target(url: string, connectionId = `c${++this.connections}`): McpTarget {
    const entry = { definition: { id: 'remote', transport: 'streamable-http', credentials: [] } } as unknown as RegisteredMcpServer;
    return { orgId: 'org', connectionId, entry, url, credentials: {} };
  }

  /** Closes the pool's clients, its sockets, and then the servers, whatever they still hold open. */
  async close(...servers: Server[]): Promise<void> {
    await this.pool.onModuleDestroy();
    await this.egress.onModuleDestroy();
    for (const server of servers) {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  }
}
