// Longer than 300 lines because the pool is one lifecycle over shared state (a client taken, drained,
// retired, its process stopped when idle or to make room) and reads best in one place.
import { Inject, Injectable, Logger, OnModuleDestroy } from '@nestjs/common';
import { Client, type CallToolResult, type Transport } from '@modelcontextprotocol/client';
import { AsyncLocalStorage } from 'node:async_hooks';
import { createHash } from 'node:crypto';
import { APP_CONFIG, AppConfig } from '../../config/app-config';
import { EgressRequestInit, EgressService } from '../../egress/egress.service';
import { MAX_RESULT_CHARS } from '../../runtime/output-budget';
import type { RegisteredMcpServer } from '../mcp-server-registry.service';
import { AnswerWatchingTransport } from './answer-watching.transport';
import { CleanStdioTransport } from './clean-stdio.transport';
import { redactSecretsDeep } from '../../common/redact-secrets';
import { classify, McpFailureCode, McpUpstreamError, secretsOf } from './mcp-failures';
import { ListedMcpTool, ListedToolsCollector, MAX_LIST_CHARS } from './mcp-tools';
import { AS_SENT, LIST_AS_SENT } from './answer-schemas';

export { classify, McpUpstreamError, redactSecrets } from './mcp-failures';
export type { McpFailureCode } from './mcp-failures';

/** Everything needed to reach one connection's server. Credentials (and the URL's token) are plaintext here only, in memory. */
export interface McpTarget {
  orgId: string;
  connectionId: string;
  entry: RegisteredMcpServer;
  url: string | null;
  credentials: Readonly<Record<string, string>>;
}

export interface McpRequestOptions {
  signal?: AbortSignal;
  timeoutMs: number;
  /**
   * A use nobody asked for (a listing on the server's own list_changed): it keeps no client open.
   * Each reset the idle time, so a server sending list_changed kept its session open and had itself
   * listed every 30 s on every node that ever used it, for good (attack round 21, AD-F3).
   */
  unasked?: boolean;
}

export { MAX_LISTED_TOOLS } from './mcp-tools';
const MAX_LIST_PAGES = 50;
/**
 * The most of one page of a tool list read: the list as stored is at most MAX_LIST_CHARS, and
 * UTF-8 may take two bytes or more for one of its characters. Everything read is parsed on the
 * event loop: a page of 14 MB (under the 16 MiB of before) held it for seconds (attack round 8).
 */
const MAX_LIST_PAGE_BYTES = 2 * MAX_LIST_CHARS;
/**
 * The most of one answer of a server read (a tool's result, a page of its tool list): twice what
 * a stored result may hold, for characters UTF-8 or JSON escapes spell in several bytes. It is
 * parsed whole on the event loop (37 MB of an answer, under the 64 MiB of before, took over a
 * second), so no more than can be kept.
 */
export const MAX_RESPONSE_BYTES = 2 * MAX_RESULT_CHARS;
/**
 * What a server may send beside a request's answer (notifications, requests of its own), and on
 * its session's event stream per minute (MCP_MAX_MESSAGES_PER_REQUEST): each costs the node's
 * event loop 50 to 90 µs in the SDK, so this bounds a call's share to about a tenth of a second.
 */
export const MAX_MESSAGES_PER_REQUEST = 1000;
const CLIENT_INFO = { name: 'capability-platform', version: '1' };

interface Pooled {
  fingerprint: string;
  client: Promise<Client>;
  transport: Transport;
  /** Calls using this client now. */
  inFlight: number;
  /** Out of the pool: closed once its last call settles. */
  retired: boolean;
  /** A client left with nothing to do is closed after a while (IDLE_PROCESS_MS), a local server's process stopped. */
  idle?: NodeJS.Timeout;
  /** The idle time ran out while a use nobody asked for was on it: closed when that ends. */
  idleDue?: boolean;
  /** When a call last took it (the least recently used idle process makes room for a new one). */
  usedAt: number;
  /** Whose connection it serves (one organization's local processes are a share of the node's). */
  orgId: string;
}

/** How long a client may sit unused before it is closed (a local server's process stopped); the next use opens it again. */
export const IDLE_PROCESS_MS = 10 * 60_000;
/**
 * Local servers' processes one node runs at once, whatever the organizations (each takes 70 MB or
 * so): past it the least recently used idle one is stopped, and with none idle the call is
 * `upstream_unavailable`. One organization's 50 connections had started 50 (3.4 GB). One
 * organization runs at most a quarter of them (at least one): its own least recently used idle one
 * makes room for its next, so its long calls cannot keep every other organization's servers out.
 */
export const MAX_LOCAL_PROCESSES = 32;

/**
 * One MCP client per connection per node, opened on first use and reused by every call. A
 * client whose transport closes (the stdio process died, the HTTP session ended) leaves the pool,
 * so the next use starts a new one; a connection whose URL or credentials changed gets a new
 * client. Every HTTP request goes through the egress policy. Nothing here touches the database:
 * a slow or hung server costs its caller a timeout, never a pooled database connection.
 */
@Injectable()
export class McpClientPool implements OnModuleDestroy {
  private readonly logger = new Logger(McpClientPool.name);
  private readonly pool = new Map<string, Pooled>();
  /** Clients out of the pool that still have calls to finish. */
  private readonly draining = new Set<Pooled>();
  private readonly toolsChanged = new Set<(orgId: string, connectionId: string) => void>();
  private closing = false;
  private readonly maxResponseBytes: number;
  private readonly maxMessages: number;
  /** The request being made, for the transport's fetch: the SDK hands that fetch nothing of it. */
  private readonly current = new AsyncLocalStorage<McpRequestOptions & { maxBytes?: number; listed?: { read: number }; tell?: (reason: Error) => void }>();

  constructor(
    private readonly egress: EgressService,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {
    this.maxResponseBytes = config.mcpMaxResponseBytes ?? MAX_RESPONSE_BYTES;
    this.maxMessages = config.mcpMaxMessagesPerRequest ?? MAX_MESSAGES_PER_REQUEST;
  }

  /** Called with a connection when its server says its tool list changed. */
  onToolsChanged(listener: (orgId: string, connectionId: string) => void): () => void {
    this.toolsChanged.add(listener);
    return () => this.toolsChanged.delete(listener);
  }

  /** Whether this node holds an open client of the connection (one a server's list_changed can come from). */
  holds(connectionId: string): boolean {
    return this.pool.has(connectionId);
  }

  /** `tools/list`, every page, as the platform stores it. No credential is in the list. */
  async listTools(target: McpTarget, options: McpRequestOptions): Promise<ListedMcpTool[]> {
    // The pages together, not each page, are read to MAX_LIST_PAGE_BYTES: 50 pages of 8 MB padding and
    // no tool cost 9 s of CPU a listing, and a server's list_changed asks for one every 30 s (O-F3).
    const page = Math.min(this.maxResponseBytes, MAX_LIST_PAGE_BYTES);
    const listed = { read: 0 };
    return this.withClient(target, { ...options, maxBytes: page, listed }, 'upstream_unavailable', async (client, signal) => {
      // Redacted like a tool's result: a server may echo the credential in its list as well.
      const list = new ListedToolsCollector(secretsOf(target));
      let cursor: string | undefined;
      for (let pages = 0; ; pages++) {
        if (pages >= MAX_LIST_PAGES) throw new McpUpstreamError('upstream_unavailable', `the server's tool list did not end after ${MAX_LIST_PAGES} pages`);
        const left = MAX_LIST_PAGE_BYTES - listed.read;
        if (left <= 0) throw new McpUpstreamError('upstream_unavailable', `the server's tool list took more than ${MAX_LIST_PAGE_BYTES} bytes over its pages`);
        const store = this.current.getStore();
        if (store) store.maxBytes = Math.min(page, left);
        // Without a cursor the SDK's listTools walks every page itself (64 of them) and keeps them all
        // before anything here could measure them: the first page is asked for as a plain request.
        const answer = await client.request({ method: 'tools/list', ...(cursor === undefined ? {} : { params: { cursor } }) }, LIST_AS_SENT, {
          signal,
          timeout: options.timeoutMs,
        });
        await list.addInTurns(answer.tools);
        if (typeof answer.nextCursor !== 'string' || answer.nextCursor === '' || answer.nextCursor === cursor) break;
        cursor = answer.nextCursor;
      }
      return list.tools;
    });
  }

  /** `tools/call`. The server's own failure (`isError`) is an answer, not an exception. No credential is in the answer. */
  async callTool(target: McpTarget, name: string, args: Record<string, unknown>, options: McpRequestOptions): Promise<CallToolResult> {
    return this.withClient(target, options, 'result_too_large', async (client, signal) => {
      // No progress is asked for (no `onprogress`): nothing shows it, and it would extend no timeout;
      // a server asked for it may send as many reports as it likes, each parsed on the event loop.
      const result = await client.request({ method: 'tools/call', params: { name, arguments: args } }, AS_SENT, { signal, timeout: options.timeoutMs });
      return redactSecretsDeep(result, secretsOf(target));
    });
  }

  /**
   * Drops the connection's client, e.g. when the connection is deleted or its credentials change:
   * the next use opens a new one. Calls already on it finish first, and then it is closed (its
   * process stopped). Closing it under them failed them `upstream_unavailable`, also a call the
   * server had finished: an approved side effect recorded as failed, and asked for again.
   */
  async release(connectionId: string): Promise<void> {
    const pooled = this.pool.get(connectionId);
    if (!pooled) return;
    this.pool.delete(connectionId);
    await this.retire(pooled);
  }

  async onModuleDestroy(): Promise<void> {
    this.closing = true;
    const all = [...this.pool.values(), ...this.draining];
    this.pool.clear();
    this.draining.clear();
    await Promise.all(all.map((p) => p.transport.close().catch(() => undefined)));
  }

  /**
   * Each connection to a local server is a process on every node that used it (about 70 MB for the
   * reference server), and each to a remote one a session with its event stream: nothing else closes
   * a client whose connection was deleted on another node.
   */
  private stopWhenIdle(connectionId: string, pooled: Pooled): void {
    clearTimeout(pooled.idle);
    pooled.idleDue = false;
    pooled.idle = setTimeout(() => {
      if (this.pool.get(connectionId) !== pooled) return;
      if (pooled.inFlight === 0) void this.release(connectionId);
      else pooled.idleDue = true;
    }, this.config.mcpIdleProcessMs ?? IDLE_PROCESS_MS);
    pooled.idle.unref();
  }

  private async retire(pooled: Pooled): Promise<void> {
    clearTimeout(pooled.idle);
    pooled.retired = true;
    if (pooled.inFlight > 0) {
      this.draining.add(pooled);
      return;
    }
    this.draining.delete(pooled);
    await pooled.transport.close().catch(() => undefined);
  }

  /** Clients open now, for tests and metrics. */
  size(): number {
    return this.pool.size;
  }

  /** The process of a stdio connection's client, when one runs on this node. */
  processId(connectionId: string): number | undefined {
    const transport = this.pool.get(connectionId)?.transport;
    return transport instanceof CleanStdioTransport ? transport.pid : undefined;
  }

  /** Calls a connection's client on this node has under way. */
  callsUnderWay(connectionId: string): number {
    return this.pool.get(connectionId)?.inFlight ?? 0;
  }

  /** `tooLarge`: the code of an answer past MAX_RESPONSE_BYTES (a connection's status names only reachability). */
  private async withClient<T>(
    target: McpTarget,
    options: McpRequestOptions & { maxBytes?: number; listed?: { read: number } },
    tooLarge: McpFailureCode,
    use: (client: Client, signal: AbortSignal) => Promise<T>,
  ): Promise<T> {
    if (this.closing) throw new McpUpstreamError('upstream_unavailable', 'the node is shutting down');
    let pooled: Pooled | undefined;
    // Aborted by the transport when this call's answer stream ends unanswered (AnswerWatchingTransport).
    const lost = new AbortController();
    const tell = (reason: Error) => lost.abort(reason);
    const signal = options.signal ? AbortSignal.any([options.signal, lost.signal]) : lost.signal;
    try {
      return await this.current.run({ ...options, signal, tell }, async () => {
        pooled = this.acquire(target, { ...options, signal });
        pooled.inFlight++;
        if (!options.unasked) pooled.usedAt = Date.now();
        const client = await pooled.client;
        return await use(client, signal);
      });
    } catch (err) {
      // The transport's own verdict (a server past its message budget) is the cause; the SDK reports it as a cancellation.
      const reason: unknown = lost.signal.reason;
      let failure = classify(reason instanceof McpUpstreamError ? reason : err, target, pooled?.transport);
      if (failure.code === 'result_too_large') failure = new McpUpstreamError(tooLarge, failure.message);
      // A transport that failed is not reused: the next call opens a new one (this one drains).
      if (failure.code !== 'tool_error' && pooled && this.pool.get(target.connectionId) === pooled && failure.code !== 'timeout') {
        void this.release(target.connectionId);
      }
      throw failure;
    } finally {
      if (pooled) {
        // Answered, failed or timed out: an answer that never came (or came under another id) is not waited for.
        if (pooled.transport instanceof AnswerWatchingTransport) pooled.transport.forget(tell);
        pooled.inFlight--;
        if (pooled.retired && pooled.inFlight === 0) void this.retire(pooled);
        // Any client, not only a local process: one of a connection deleted on another node, or never
        // called again, kept its session and event stream open for the node's life (O-F5).
        else if (pooled.inFlight === 0 && (!options.unasked || pooled.idle === undefined)) this.stopWhenIdle(target.connectionId, pooled);
        else if (pooled.inFlight === 0 && pooled.idleDue && this.pool.get(target.connectionId) === pooled) void this.release(target.connectionId);
      }
    }
  }

  private acquire(target: McpTarget, options: McpRequestOptions): Pooled {
    const fingerprint = fingerprintOf(target);
    const existing = this.pool.get(target.connectionId);
    if (existing && existing.fingerprint === fingerprint) {
      if (!options.unasked) clearTimeout(existing.idle);
      return existing;
    }
    if (existing) void this.release(target.connectionId);
    if (target.entry.definition.transport === 'stdio') this.makeRoomForProcess(target.orgId);

    const transport = this.transportFor(target);
    // Without versionNegotiation the 2.x client speaks the 2025 revisions (the initialize handshake,
    // no server/discover probe), which every vendor server of the catalog speaks.
    const client = new Client(CLIENT_INFO, { capabilities: {} });
    client.setNotificationHandler('notifications/tools/list_changed', () => {
      for (const listener of this.toolsChanged) listener(target.orgId, target.connectionId);
    });
    const pooled: Pooled = { fingerprint, transport, client: Promise.resolve(client), inFlight: 0, retired: false, usedAt: Date.now(), orgId: target.orgId };
    transport.onclose = () => {
      if (this.pool.get(target.connectionId) === pooled) this.pool.delete(target.connectionId);
    };
    pooled.client = client.connect(transport, { signal: options.signal, timeout: options.timeoutMs }).then(
      () => client,
      async (err: unknown) => {
        if (this.pool.get(target.connectionId) === pooled) this.pool.delete(target.connectionId);
        await transport.close().catch(() => undefined);
        throw err;
      },
    );
    pooled.client.catch(() => undefined);
    this.pool.set(target.connectionId, pooled);
    return pooled;
  }

  private makeRoomForProcess(orgId: string): void {
    const max = this.config.mcpMaxLocalProcesses ?? MAX_LOCAL_PROCESSES;
    const share = Math.max(1, Math.floor(max / 4));
    const local = [...this.pool].filter(([, p]) => p.transport instanceof CleanStdioTransport);
    const draining = [...this.draining].filter((p) => p.transport instanceof CleanStdioTransport);
    const mine = local.filter(([, p]) => p.orgId === orgId);
    const leastRecentIdle = (of: typeof local) => of.filter(([, p]) => p.inFlight === 0).sort(([, a], [, b]) => a.usedAt - b.usedAt)[0];
    if (mine.length + draining.filter((p) => p.orgId === orgId).length >= share) {
      const idle = leastRecentIdle(mine);
      if (!idle) {
        throw new McpUpstreamError(
          'upstream_unavailable',
          `this organization already runs ${share} local MCP servers, all busy, the most one organization may on this node; try again shortly`,
        );
      }
      void this.release(idle[0]);
      return;
    }
    if (local.length + draining.length < max) return;
    const idle = leastRecentIdle(local);
    if (!idle) throw new McpUpstreamError('upstream_unavailable', `this node already runs ${max} local MCP servers, all busy; try again shortly`);
    void this.release(idle[0]);
  }

  private transportFor(target: McpTarget): Transport {
    const definition = target.entry.definition;
    if (definition.transport === 'stdio') {
      const env: Record<string, string> = { ...(definition.stdio?.env ?? {}) };
      for (const field of definition.credentials) {
        const value = target.credentials[field.name];
        if (value !== undefined && field.env) env[field.env] = value;
      }
      const command = target.entry.command!;
      return new CleanStdioTransport({ command: command.command, args: command.args, env });
    }
    const url = definition.url ?? target.url;
    if (!url) throw new McpUpstreamError('upstream_unavailable', 'the connection has no URL');
    const headers: Record<string, string> = {};
    for (const field of definition.credentials) {
      const value = target.credentials[field.name];
      if (value !== undefined && field.header) headers[field.header] = value;
    }
    return new AnswerWatchingTransport(
      new URL(url),
      {
        // A connection is one organization's: its calls share the origin's sockets with others' (ORIGIN_SHARE).
        fetch: (input, init) => this.egress.fetch(input as string | URL, { ...this.bounded(init), share: target.orgId }),
        requestInit: { headers },
        // Redirects are for the egress policy to judge, hop by hop; the transport must not follow them itself.
      },
      () => this.current.getStore()?.tell,
      { maxMessages: this.maxMessages, maxBytes: this.maxResponseBytes },
    );
  }

  /**
   * The SDK's timeout settles a request but never ends its HTTP exchange, so a server that trickles
   * or floods its answer would keep the socket and fill memory: each exchange gets the request's
   * own deadline, and every answer a size cap. A GET is the session's event stream, meant to stay
   * open: the transport bounds what it carries per minute instead (AnswerWatchingTransport).
   */
  private bounded(init: RequestInit | undefined): EgressRequestInit {
    const stream = (init?.method ?? 'GET').toUpperCase() === 'GET';
    const store = this.current.getStore();
    const listed = stream ? undefined : store?.listed;
    const onBytes = listed && ((n: number) => void (listed.read += n));
    return { ...init, deadlineMs: stream ? Infinity : store?.timeoutMs, maxBytes: store?.maxBytes ?? this.maxResponseBytes, onBytes };
  }
}

function fingerprintOf(target: McpTarget): string {
  return createHash('sha256')
    .update(JSON.stringify([target.entry.definition.id, target.url, Object.entries(target.credentials).sort()]))
    .digest('hex');
}
