import { Injectable } from '@nestjs/common';
import { LruCache } from '../../common/lru-cache';
import { OrgGate } from '../../common/org-gate';
import { McpConnectionsRepository, McpConnectionSummary } from './mcp-connections.repository';
import { ConnectionTool, ListedMcpTool, MAX_LISTED_TOOLS } from './mcp-tools';

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
  /** The tools with their effective risk, as last asked (McpConnectionSync.bound): `key` names the trust and overrides. */
  risked?: { key: string; tools: readonly ConnectionTool[] };
  /** The list's length as JSON. */
  chars: number;
}

/** Lists kept per node, by the length of their JSON: a few lists at the 4 MiB cap, or thousands of common ones. */
export const STORED_LISTS_CACHED_CHARS = 16 * 1024 * 1024;
/**
 * Of those, one organization's at most: what one version may bind (BOUND_LISTS_MAX_BYTES), so an
 * organization whose agents bind more than that in turn evicts its own lists, never the others'.
 */
export const STORED_LISTS_CACHED_CHARS_PER_ORG = STORED_LISTS_CACHED_CHARS / 4;

interface Kept extends StoredToolList {
  orgId: string;
}

/**
 * Connections' tool lists, read from the database only when the node does not hold the list its
 * row names (`tools_digest`, which changes with the list). A call of one tool used to read, parse
 * and hash the whole list (up to 4 MiB, 500 tools: 0.3 s of CPU) every time: at the per-key rate
 * limit, one agent key saturated a node. Now a call costs a read of the connection without its
 * list and a lookup per tool. Drift stays exact: a list is only ever found under the digest of
 * its own content, so a changed list is a miss, read at once.
 *
 * An organization whose agents bound more lists than the node keeps, called in turn, made every
 * call of every organization a miss again (attack round 12, J-F1): one organization's lists now
 * take at most STORED_LISTS_CACHED_CHARS_PER_ORG, and its lists not held are read one at a time
 * on the node, so its misses cost the node one read at a time, waiting holding nothing.
 */
@Injectable()
export class StoredToolLists {
  private readonly lists = new Map<string, Kept>();
  private chars = 0;
  private readonly charsOf = new Map<string, number>();
  private readonly reads = new OrgGate(1);

  constructor(private readonly repository: McpConnectionsRepository) {}

  /** The list of `row` (a row read with its tools, such as a refresh's, is used as it is). */
  async of(row: McpConnectionSummary & { tools?: ListedMcpTool[] }): Promise<StoredToolList> {
    const key = `${row.id}/${row.tools_digest}`;
    const known = this.held(key);
    if (known) return known;
    if (row.tools) return this.keep(row.org_id, key, row.tools, JSON.stringify(row.tools).length);
    return this.reads.run(row.org_id, async () => {
      // Read by another request of the organization while this one waited for its turn.
      const now = this.held(key);
      if (now) return now;
      const read = await this.repository.getTools(row.org_id, row.id);
      // Deleted since: a connection with nothing listed (a published version shows its tools as drift).
      if (!read) return { tools: [], digests: new LruCache<string, string>(1), chars: 0 };
      const tools = JSON.parse(read.json) as ListedMcpTool[];
      // Synced since the row was read: the newer list, under its own digest. Weighed as listed, as a
      // refresh's row is: PostgreSQL prints a list with a space after every `,` and `:`, up to half as
      // long again, and a list of 4 MiB as listed, weighed as printed (6.2 MB), was never kept: read,
      // parsed and frozen again on every call (attack round 21, AD-F1).
      return this.keep(row.org_id, `${row.id}/${read.digest}`, tools, JSON.stringify(tools).length);
    });
  }

  private held(key: string): StoredToolList | undefined {
    const known = this.lists.get(key);
    if (!known) return undefined;
    this.lists.delete(key);
    this.lists.set(key, known);
    return known;
  }

  private keep(orgId: string, key: string, tools: ListedMcpTool[], chars: number): StoredToolList {
    const list: Kept = { tools: deepFreeze(tools), digests: new LruCache<string, string>(4 * MAX_LISTED_TOOLS), chars, orgId };
    if (chars > STORED_LISTS_CACHED_CHARS_PER_ORG) return list;
    const racing = this.lists.get(key);
    if (racing) return racing;
    this.lists.set(key, list);
    this.chars += chars;
    this.charsOf.set(orgId, (this.charsOf.get(orgId) ?? 0) + chars);
    // The organization's own least recently used lists first, then anyone's.
    for (const [oldest, kept] of this.lists) {
      if ((this.charsOf.get(orgId) ?? 0) <= STORED_LISTS_CACHED_CHARS_PER_ORG) break;
      if (kept.orgId === orgId) this.forget(oldest, kept);
    }
    for (const [oldest, kept] of this.lists) {
      if (this.chars <= STORED_LISTS_CACHED_CHARS) break;
      this.forget(oldest, kept);
    }
    return list;
  }

  private forget(key: string, kept: Kept): void {
    this.lists.delete(key);
    this.chars -= kept.chars;
    const left = (this.charsOf.get(kept.orgId) ?? 0) - kept.chars;
    if (left > 0) this.charsOf.set(kept.orgId, left);
    else this.charsOf.delete(kept.orgId);
  }
}

function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const child of Object.values(value)) deepFreeze(child);
  }
  return value;
}
