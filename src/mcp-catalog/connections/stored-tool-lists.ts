import { Injectable } from '@nestjs/common';
import { LruCache } from '../../common/lru-cache';
import { McpConnectionsRepository, McpConnectionSummary } from './mcp-connections.repository';
import { ListedMcpTool, MAX_LISTED_TOOLS } from './mcp-tools';

/** A connection's stored tool list as one node keeps it, by the list's digest. */
export interface StoredToolList {
  /** Frozen: every build of every version bound to the connection shares it. */
  tools: readonly ListedMcpTool[];
  /**
   * The digests of these tools as versions offer them (mcpToolDigest), by what else the digest
   * depends on (the spec's overrides, the risk): kept with the list they were computed from, so
   * they can never outlive it.
   */
  digests: LruCache<string, string>;
}

/** Lists kept per node, by the length of their JSON: a few lists at the 4 MiB cap, or thousands of common ones. */
export const STORED_LISTS_CACHED_CHARS = 16 * 1024 * 1024;

/**
 * Connections' tool lists, read from the database only when the node does not hold the list its
 * row names (`tools_digest`, which changes with the list). A call of one tool used to read, parse
 * and hash the whole list (up to 4 MiB, 500 tools: 0.3 s of CPU) every time: at the per-key rate
 * limit, one agent key saturated a node. Now a call costs a read of the connection without its
 * list and a lookup per tool. Drift stays exact: a list is only ever found under the digest of
 * its own content, so a changed list is a miss, read at once.
 */
@Injectable()
export class StoredToolLists {
  private readonly lists = new Map<string, StoredToolList & { chars: number }>();
  private chars = 0;

  constructor(private readonly repository: McpConnectionsRepository) {}

  /** The list of `row` (a row read with its tools, such as a refresh's, is used as it is). */
  async of(row: McpConnectionSummary & { tools?: ListedMcpTool[] }): Promise<StoredToolList> {
    const key = `${row.id}/${row.tools_digest}`;
    const known = this.lists.get(key);
    if (known) {
      this.lists.delete(key);
      this.lists.set(key, known);
      return known;
    }
    if (row.tools) return this.keep(key, row.tools, JSON.stringify(row.tools).length);
    const read = await this.repository.getTools(row.org_id, row.id);
    // Deleted since: a connection with nothing listed (a published version shows its tools as drift).
    if (!read) return { tools: [], digests: new LruCache(1) };
    // Synced since the row was read: the newer list, under its own digest.
    return this.keep(`${row.id}/${read.digest}`, JSON.parse(read.json) as ListedMcpTool[], read.json.length);
  }

  private keep(key: string, tools: ListedMcpTool[], chars: number): StoredToolList {
    const list = { tools: deepFreeze(tools), digests: new LruCache<string, string>(4 * MAX_LISTED_TOOLS), chars };
    if (chars > STORED_LISTS_CACHED_CHARS) return list;
    const racing = this.lists.get(key);
    if (racing) return racing;
    this.lists.set(key, list);
    this.chars += chars;
    for (const [oldest, { chars: size }] of this.lists) {
      if (this.chars <= STORED_LISTS_CACHED_CHARS) break;
      this.lists.delete(oldest);
      this.chars -= size;
    }
    return list;
  }
}

function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const child of Object.values(value)) deepFreeze(child);
  }
  return value;
}
