import { Inject, Injectable, Logger, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { AuditService } from '../../audit/audit.service';
import { APP_CONFIG, AppConfig } from '../../config/app-config';
import { SecretOpenError, SecretsService } from '../../secrets/secrets.service';
import { McpServerRegistry } from '../mcp-server-registry.service';
import { McpClientPool, McpTarget, McpUpstreamError } from './mcp-client-pool.service';
import { McpConnectionRow, McpConnectionsRepository, McpConnectionSummary } from './mcp-connections.repository';
import { auditedDiff, BOUND_LISTS_MAX_BYTES, BoundConnection, ConnectionTool, ListedMcpTool, NO_TOOLS, riskOf, toolListDiffInTurns } from './mcp-tools';
import { LruCache } from '../../common/lru-cache';
import { ownRisk } from './mcp-connection-view';
import type { ToolRisk } from '../../capabilities/capability.types';
import { PerKeyThrottle } from './per-key-throttle';
import { WindowBudget } from './window-budget';
import { StoredToolList, StoredToolLists } from './stored-tool-lists';

const SYSTEM_ACTOR = { type: 'system', id: 'mcp-refresh' };
/** A connection's tools are listed again on its server's list_changed at most this often (a later one waits). */
export const LIST_CHANGED_INTERVAL_MS = 30_000;
/** ...and, for a server that keeps sending it, at most this often: each listing doubles the wait (PerKeyThrottle). */
export const LIST_CHANGED_MAX_INTERVAL_MS = 600_000;
/**
 * ...and one organization's connections together at most this many times in LIST_CHANGED_MAX_INTERVAL_MS
 * on a node; the others wait for their turn. Each connection's backoff alone let an organization's 50
 * connections list a list of row 221's bound every ten minutes each, about 2% of a core and 270 MB
 * of audited listings a day per node, by no key (attack round 21, AD-N1).
 */
export const LIST_CHANGED_PER_ORG = 10;

export type { BoundConnection, ConnectionTool } from './mcp-tools';

/**
 * Connections' tool lists kept current (listed again on a person's sync, when stale before use,
 * on the server's list_changed), and what agents and the executor read of a connection: its tools
 * and its server. As in McpConnectionsService, every talk with a server happens with no database
 * connection held (read, release, talk, then write), so a hung server costs a timeout and nothing else.
 */
@Injectable()
export class McpConnectionSync implements OnModuleInit, OnModuleDestroy {
  private readonly logger = new Logger(McpConnectionSync.name);
  private readonly refreshing = new Map<string, Promise<McpConnectionRow | undefined>>();
  private unsubscribe?: () => void;
  private readonly listChanged = new PerKeyThrottle(LIST_CHANGED_INTERVAL_MS, LIST_CHANGED_MAX_INTERVAL_MS);
  private readonly orgListings = new WindowBudget(LIST_CHANGED_PER_ORG, LIST_CHANGED_MAX_INTERVAL_MS);
  /** Connections whose listing waits for their organization's budget: one timer each. */
  private readonly deferred = new Map<string, NodeJS.Timeout>();

  constructor(
    private readonly dataSource: DataSource,
    private readonly repository: McpConnectionsRepository,
    private readonly registry: McpServerRegistry,
    private readonly pool: McpClientPool,
    private readonly secrets: SecretsService,
    private readonly audit: AuditService,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly lists: StoredToolLists,
  ) {}

  onModuleInit(): void {
    // The server sends list_changed whenever it likes: one sending it every 10 ms, its list a little
    // different each time, wrote ~30 audited refreshes a second. At most one per connection per interval.
    this.unsubscribe = this.pool.onToolsChanged((orgId, connectionId) =>
      this.listChanged.request(`${orgId}/${connectionId}`, () => this.listOnChange(orgId, connectionId)),
    );
  }

  onModuleDestroy(): void {
    this.unsubscribe?.();
    this.listChanged.close();
    for (const timer of this.deferred.values()) clearTimeout(timer);
    this.deferred.clear();
  }

  /** A listing a server's list_changed asked for, in its organization's budget on this node (or when it frees). */
  private listOnChange(orgId: string, connectionId: string): void {
    const key = `${orgId}/${connectionId}`;
    if (this.deferred.has(key)) return;
    // Closed since (idle, deleted, moved): a listing nobody asked for would open a client again,
    // its server's next list_changed another listing, for good (attack round 21, AD-F3).
    if (!this.pool.holds(connectionId)) return;
    const wait = this.orgListings.take(orgId);
    if (wait > 0) {
      const timer = setTimeout(() => {
        this.deferred.delete(key);
        this.listOnChange(orgId, connectionId);
      }, wait);
      timer.unref();
      this.deferred.set(key, timer);
      return;
    }
    void this.refresh(orgId, connectionId, 'list_changed').catch((err) =>
      this.logger.warn(`refreshing MCP connection ${connectionId} after list_changed failed: ${(err as Error).message}`),
    );
  }

  /**
   * The bound connections of a spec with their tools, in the order asked; missing ones are left
   * out (publish reports them, a published version shows their tools as drift). A connection
   * listed longer ago than MCP_TOOLS_TTL_SECONDS is listed again first when `refreshStale`.
   */
  async bound(orgId: string, ids: readonly string[], options: { refreshStale: boolean }): Promise<BoundConnection[]> {
    let rows: (McpConnectionSummary | McpConnectionRow)[] = await this.repository.getSummaries(orgId, ids);
    if (options.refreshStale) {
      const ttlMs = this.config.mcpToolsTtlSeconds * 1000;
      // A list the bound leaves out is not read, so not listed again either.
      const fits = withinBound(ids, rows);
      const stale = rows.filter((r) => fits.has(r.id) && Date.now() - new Date(r.synced_at).getTime() >= ttlMs);
      if (stale.length > 0) {
        const refreshed = await Promise.all(stale.map((r) => this.refresh(orgId, r.id, 'ttl').catch(() => r)));
        const byId = new Map(refreshed.filter((r) => r !== undefined).map((r) => [r.id, r]));
        rows = rows.map((r) => byId.get(r.id) ?? r);
      }
    }
    const byId = new Map(rows.map((r) => [r.id, r]));
    const fits = withinBound(ids, rows);
    const bound: BoundConnection[] = [];
    for (const id of ids) {
      const r = byId.get(id);
      if (!r) continue;
      const entry = this.registry.get(r.server);
      const trust = entry?.definition.trustAnnotations ?? false;
      if (!fits.has(r.id)) {
        bound.push({ id: r.id, name: r.name, server: r.server, entry, tools: NO_TOOLS, chars: 0, overBound: true, digests: new LruCache<string, string>(1) });
        continue;
      }
      const list = await this.lists.of(r);
      bound.push({
        id: r.id,
        name: r.name,
        server: r.server,
        entry,
        tools: withRisk(list, trust, r.risk_overrides),
        chars: list.chars,
        digests: list.digests,
      });
    }
    return bound;
  }

  /**
   * What the executor's MCP resolver needs to call a connection's server: its entry, URL and the
   * credentials opened in memory. Throws McpUpstreamError when the connection or its entry is gone.
   */
  async target(orgId: string, connectionId: string): Promise<McpTarget> {
    const row = await this.repository.getSummary(orgId, connectionId);
    if (!row) throw new McpUpstreamError('upstream_unavailable', 'the MCP connection no longer exists');
    return this.targetOf(row);
  }

  /**
   * Opens the connection's sealed URL and credentials. One this node cannot open (sealed under a
   * secrets key it does not hold: a misconfigured node, or a rotation done out of order) is the
   * platform's fault, not the server's: said to the operator here, and a SecretOpenError to the caller.
   */
  targetOf(row: McpConnectionSummary): McpTarget {
    const entry = this.registry.get(row.server);
    if (!entry) throw new McpUpstreamError('upstream_unavailable', `the catalog no longer has the "${row.server}" server`);
    try {
      const credentials = row.credentials ? (JSON.parse(this.secrets.open(row.credentials)) as Record<string, string>) : {};
      const url = row.url_sealed ? this.secrets.open(row.url_sealed) : row.url;
      return { orgId: row.org_id, connectionId: row.id, entry, url, credentials };
    } catch (err) {
      if (err instanceof SecretOpenError) {
        this.logger.error(`MCP connection ${row.id} (organization ${row.org_id}): its stored credentials or URL cannot be opened: ${err.message}`);
      }
      throw err;
    }
  }

  /** Lists the tools again and stores them, one refresh per connection at a time on this node. */
  refresh(orgId: string, id: string, why: 'sync' | 'ttl' | 'list_changed', actor = SYSTEM_ACTOR): Promise<McpConnectionRow | undefined> {
    const key = `${orgId}/${id}`;
    const running = this.refreshing.get(key);
    // A person's sync always lists again; an automatic one joins one already under way.
    if (running && why !== 'sync') return running;
    const work = this.doRefresh(orgId, id, why, actor).finally(() => {
      if (this.refreshing.get(key) === work) this.refreshing.delete(key);
    });
    this.refreshing.set(key, work);
    return work;
  }

  private async doRefresh(
    orgId: string,
    id: string,
    why: 'sync' | 'ttl' | 'list_changed',
    actor: { type: string; id: string },
  ): Promise<McpConnectionRow | undefined> {
    const before = await this.repository.get(orgId, id);
    if (!before) return undefined;
    let tools: ListedMcpTool[] | undefined;
    let failure: McpUpstreamError | undefined;
    try {
      tools = await this.pool.listTools(this.targetOf(before), { timeoutMs: this.listTimeoutMs(why), unasked: why === 'list_changed' });
    } catch (err) {
      // A node that cannot open the secrets never reached the server: it writes nothing over the
      // shared row (another node may open them) and records no sync.
      if (err instanceof SecretOpenError) throw err;
      failure = err instanceof McpUpstreamError ? err : new McpUpstreamError('upstream_unavailable', 'the MCP server could not be reached');
    }
    // Compared before the transaction, in turns: no pooled connection waits on it (O-F6).
    const diff = tools && (await toolListDiffInTurns(before.tools, tools));
    return this.dataSource.transaction(async (m) => {
      const base = { orgId, actor, target: { type: 'mcp_connection', id } } as const;
      if (failure) {
        const row = await this.repository.saveError(m, orgId, id, before, { code: failure.code, message: failure.message });
        // Moved meanwhile (PUT /url): the list taken at the new address stands.
        if (!row) return this.repository.get(orgId, id, m);
        if (row && (why === 'sync' || before.status !== 'error')) {
          await this.audit.record(m, {
            ...base,
            type: 'mcp_connection.synced',
            data: { name: before.name, trigger: why, status: 'error', error: { code: failure.code, message: failure.message } },
          });
        }
        return row;
      }
      const row = await this.repository.saveTools(m, orgId, id, before, tools!);
      if (!row) return this.repository.get(orgId, id, m);
      const changed = diff!.added.length + diff!.removed.length + diff!.changed.length > 0;
      if (row && (why === 'sync' || changed || before.status === 'error')) {
        await this.audit.record(m, {
          ...base,
          type: 'mcp_connection.synced',
          data: { name: before.name, trigger: why, status: 'ready', ...auditedDiff(diff!) },
        });
      }
      return row;
    });
  }

  /**
   * A person connecting or syncing may wait as long as any outbound request (a stdio server's
   * first start included); a refresh before a call waits no longer than the call itself would.
   */
  listTimeoutMs(why: 'sync' | 'ttl' | 'list_changed'): number {
    return why === 'ttl' ? this.config.toolTimeoutMs : Math.max(this.config.toolTimeoutMs, this.config.egress.requestTimeoutMs);
  }
}

/**
 * The connections among `ids` whose lists are read: in the order asked (the spec's), each whose
 * stored list keeps the total within BOUND_LISTS_MAX_BYTES; one that would take it past is left out.
 * The first is always read: any list the platform stores (MAX_LIST_CHARS characters, which in
 * UTF-8 and jsonb's spacing may weigh more bytes than that) can be bound by a version of its own.
 */
function withinBound(ids: readonly string[], rows: readonly McpConnectionSummary[]): Set<string> {
  const byId = new Map(rows.map((r) => [r.id, r]));
  const fits = new Set<string>();
  let bytes = 0;
  for (const id of ids) {
    const r = byId.get(id);
    if (!r) continue;
    const size = Number(r.tools_bytes);
    if (fits.size > 0 && bytes + size > BOUND_LISTS_MAX_BYTES) continue;
    bytes += size;
    fits.add(r.id);
  }
  return fits;
}

/**
 * The list's tools with their effective risk, made once per list and per trust and overrides: a
 * copy of every tool on every build was a tenth of a call of an agent binding 10,000 tools (attack
 * round 12, J-F2), and the same array each time lets the composer keep what it made of it.
 */
function withRisk(list: StoredToolList, trust: boolean, overrides: Record<string, ToolRisk>): readonly ConnectionTool[] {
  if (list.tools.length === 0) return NO_TOOLS;
  const key = `${trust}/${JSON.stringify(overrides)}`;
  if (list.risked?.key === key) return list.risked.tools;
  // The tools frozen, the array readonly by type only: V8 walks a frozen array of hundreds slowly.
  const tools = list.tools.map((t) => Object.freeze({ ...t, risk: riskOf(t, trust, ownRisk(overrides, t.name)).risk }));
  list.risked = { key, tools };
  return tools;
}
