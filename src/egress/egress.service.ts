import { Inject, Injectable, OnModuleDestroy } from '@nestjs/common';
import type { LookupFunction } from 'node:net';
import { Agent, fetch as undiciFetch } from 'undici';
import { ApiError } from '../common/api-error';
import { deliverableUrl } from './saved-urls';
import { connectorsByPort, Lookups } from './lookups';
import { OrgGate } from '../common/org-gate';
import { APP_CONFIG, AppConfig } from '../config/app-config';
import { AllowList, checkResolved, checkUrl, EgressRefusedError, EgressTimeoutError, EgressTooLargeError, parseAllowList, portOf } from './egress-policy';

export { SAVED_URL_REFUSALS } from './saved-urls';

export type EgressRequestInit = RequestInit & {
  /** How long to wait for the response headers; at most EGRESS_TIMEOUT_MS. */
  timeoutMs?: number;
  /**
   * How long the whole exchange may take, redirects and the body included, counted from the call.
   * Default: the headers' limit, so nothing outlives EGRESS_TIMEOUT_MS unless its caller says why
   * (a model streams its answer for minutes); `Infinity` only for a stream meant to stay open
   * (such streams are not counted against EGRESS_MAX_CONNECTIONS_PER_ORIGIN).
   */
  deadlineMs?: number;
  /** Past this many bytes of body the read fails with EgressTooLargeError and the connection is closed. */
  maxBytes?: number;
  /** Told the size of each piece of body read: a caller's own bound across exchanges (a tool list's pages). */
  onBytes?: (bytes: number) => void;
  /**
   * Whose exchange it is (an organization's id): one holds at most a quarter of an origin's
   * sockets at once (ORIGIN_SHARE), the rest of its exchanges waiting, within their own deadline,
   * for one of its own to end. Streams meant to stay open are not counted.
   */
  share?: string;
  /** Whose exchange it is, when `share` is not given: its host's lookups take the organization's turns (Lookups). */
  org?: string;
};

const MAX_REDIRECTS = 5;
/**
 * Sockets open to one origin at once (EGRESS_MAX_CONNECTIONS_PER_ORIGIN). Without a bound, a
 * server that made the node send it requests and never answered them (an MCP server sending
 * requests of its own) had it open a socket for each: 2,578 in 2 s, every tenant's fds.
 */
export const MAX_CONNECTIONS_PER_ORIGIN = 256;
/**
 * The part of an origin's sockets one organization's exchanges may hold at once. Every organization
 * reaches a hosted vendor through the same origin: one holding 280 calls of a tool that never
 * answered made another's calls there wait 9 to 26 s for a socket (attack round 8).
 */
export const ORIGIN_SHARE = 1 / 4;
/** setTimeout's ceiling; a longer deadline would fire at once. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * The one way out of the process for HTTP. A drop-in `fetch` (SDK clients take it as their
 * `fetch` option) that connects only where the egress policy allows: the URL is judged first,
 * then every address its host resolves to, and the socket connects to one of exactly those
 * addresses (the lookup the socket uses is the one that was checked, so a DNS answer that changes
 * between check and connect cannot smuggle in a private address). Redirects are followed by hand,
 * each hop judged again.
 */
@Injectable()
export class EgressService implements OnModuleDestroy {
  private readonly allow: AllowList;
  private readonly agent: Agent;
  /**
   * Streams meant to stay open (an MCP session's events): one per session, so as many as a node
   * has sessions to an origin, and counting them against its bound would keep every request out.
   */
  private readonly streams: Agent;
  private readonly requestTimeoutMs: number;
  /** Each organization's turns at an origin's sockets, keyed `<share>\n<origin>`. */
  private readonly shares: OrgGate;
  private readonly lookups: Lookups;

  constructor(@Inject(APP_CONFIG) config: AppConfig) {
    this.allow = parseAllowList(config.egress.allowedHosts);
    this.requestTimeoutMs = config.egress.requestTimeoutMs;
    this.lookups = new Lookups(config.egress.connectTimeoutMs);
    // A socket's lookup is told the host only; a connector per port gives it the port (a host may be listed at some ports only).
    const options = { connect: connectorsByPort(config.egress.connectTimeoutMs, this.checkedLookupAt), headersTimeout: config.egress.requestTimeoutMs };
    const perOrigin = config.egress.maxConnectionsPerOrigin ?? MAX_CONNECTIONS_PER_ORIGIN;
    this.shares = new OrgGate(Math.max(1, Math.floor(perOrigin * ORIGIN_SHARE)));
    this.agent = new Agent({ ...options, connections: perOrigin });
    this.streams = new Agent(options);
  }

  async onModuleDestroy(): Promise<void> {
    await Promise.all([this.agent.destroy(), this.streams.destroy()]);
  }

  /**
   * Refuses, before anything is stored, a URL the policy would refuse at connect time: its
   * scheme, its host, and what the host resolves to now. `field` is the request field to name.
   * Every route that saves a URL calls this, so the same URL gets the same answer on each: a
   * value nothing could be sent to is `400 invalid_request` (code `url`), one the policy refuses
   * `422 egress_refused`, both at `field`.
   */
  async assertAllowed(url: string, field: string, org?: string): Promise<void> {
    const parsed = deliverableUrl(url, field);
    try {
      checkUrl(this.allow, parsed);
      const addresses = await this.lookups.all(parsed.hostname.replace(/^\[|\]$/g, ''), 0, org);
      checkResolved(
        this.allow,
        parsed.hostname,
        addresses.map((a) => a.address),
        portOf(parsed),
      );
    } catch (err) {
      if (err instanceof EgressRefusedError) {
        throw new ApiError('egress_refused', `${field}: ${err.message}`, [{ path: field, code: 'egress_refused', message: err.message }]);
      }
      // A host that does not resolve now may later (whatever the resolver said: not found, a server
      // failure, EAI_FAIL); refusing it is the connect step's job.
      if ((err as NodeJS.ErrnoException).syscall === 'getaddrinfo') return;
      throw err;
    }
  }

  async fetch(input: string | URL, init: EgressRequestInit = {}): Promise<Response> {
    const { timeoutMs, deadlineMs, maxBytes, onBytes, share, org, ...rest } = init;
    const limit = Math.min(timeoutMs ?? this.requestTimeoutMs, this.requestTimeoutMs);
    const total = deadlineMs ?? limit;
    let url = new URL(String(input));
    const origin = url.origin;
    // The headers' timer stops when they arrive; this one ends the exchange at any stage, and the
    // abort makes undici destroy the socket, so a body that trickles or floods costs nothing past it.
    const stop = new AbortController();
    const timer =
      total <= MAX_TIMER_MS ? setTimeout(() => stop.abort(new EgressTimeoutError(`${origin} did not finish answering within ${total} ms`)), total) : undefined;
    const signal = rest.signal ? AbortSignal.any([rest.signal, stop.signal]) : stop.signal;
    // A body nobody reads keeps its socket until then; the timer alone must not keep the process up.
    timer?.unref();
    let leave: (() => void) | undefined;
    const exchange: Exchange = {
      stop,
      signal,
      callerSignal: rest.signal ?? undefined,
      maxBytes,
      onBytes,
      origin,
      dispatcher: timer === undefined ? this.streams : this.agent,
      finish: () => {
        clearTimeout(timer);
        leave?.();
      },
    };
    let requestInit: RequestInit = { ...rest, signal };
    try {
      if (share !== undefined && timer !== undefined) {
        leave = await this.shares.enter(`${share}\n${origin}`, signal);
        // Ended by its deadline or its caller with the body unread: the socket goes, and so does the turn.
        signal.addEventListener('abort', leave, { once: true });
      }
      for (let hop = 0; ; hop++) {
        checkUrl(this.allow, url);
        const at = url;
        const response = await this.lookups.owner.run(org ?? share, () => this.fetchOnce(at, requestInit, limit, exchange));
        const location = response.headers.get('location');
        if (init.redirect === 'manual' || !location || ![301, 302, 303, 307, 308].includes(response.status)) return guardBody(response, exchange);
        await response.body?.cancel().catch(() => undefined);
        if (init.redirect === 'error') throw new TypeError(`redirect refused: ${url.origin} answered ${response.status}`);
        if (hop + 1 >= MAX_REDIRECTS) throw new TypeError(`more than ${MAX_REDIRECTS} redirects from ${origin}`);
        const next = new URL(location, url);
        requestInit = redirectedInit(requestInit, response.status, url, next);
        url = next;
      }
    } catch (err) {
      exchange.finish();
      throw failureOf(err, exchange);
    }
  }

  /** One hop; its headers must come within `timeoutMs`, and a late answer ends the whole exchange. */
  private async fetchOnce(url: URL, init: RequestInit, timeoutMs: number, exchange: Exchange): Promise<Response> {
    const timer = setTimeout(() => exchange.stop.abort(new EgressTimeoutError(`${url.origin} did not answer within ${timeoutMs} ms`)), timeoutMs);
    try {
      const options = { ...(init as object), redirect: 'manual', dispatcher: exchange.dispatcher } as Parameters<typeof undiciFetch>[1];
      const response = await undiciFetch(url, options);
      return response as unknown as Response;
    } finally {
      clearTimeout(timer);
    }
  }

  /** The socket's own lookup at `port`: resolves, refuses unless every address passes, hands back only checked ones. */
  private readonly checkedLookupAt = (port: number): LookupFunction =>
    ((hostname: string, options: { all?: boolean; family?: number | string }, callback: (...args: unknown[]) => void) => {
      const family = options.family === 'IPv6' ? 6 : options.family === 'IPv4' ? 4 : Number(options.family ?? 0) || 0;
      void this.lookups.all(hostname, family).then((addresses) => {
        try {
          checkResolved(
            this.allow,
            hostname,
            addresses.map((a) => a.address),
            port,
          );
        } catch (refused) {
          return callback(refused);
        }
        if (options.all) return callback(null, addresses);
        return callback(null, addresses[0].address, addresses[0].family);
      }, callback);
    }) as unknown as LookupFunction;
}

/** fetch's own redirect rules (WHATWG): 303 (and 301/302 after POST) become GET without a body; credentials stay on their origin. */
function redirectedInit(init: RequestInit, status: number, from: URL, to: URL): RequestInit {
  const next: RequestInit = { ...init };
  const method = (init.method ?? 'GET').toUpperCase();
  if (status === 303 ? method !== 'HEAD' : (status === 301 || status === 302) && method === 'POST') {
    next.method = 'GET';
    delete next.body;
  } else if (
    init.body !== undefined &&
    init.body !== null &&
    typeof init.body !== 'string' &&
    !(init.body instanceof URLSearchParams) &&
    !ArrayBuffer.isView(init.body)
  ) {
    throw new TypeError('cannot follow a redirect that resends a streamed body');
  }
  if (from.origin !== to.origin) {
    const headers = new Headers(init.headers);
    headers.delete('authorization');
    headers.delete('cookie');
    headers.delete('proxy-authorization');
    next.headers = headers;
  }
  return next;
}

interface Exchange {
  stop: AbortController;
  /** What undici listens on, held for the body's life: a derived signal nobody holds may be collected. */
  signal: AbortSignal;
  callerSignal?: AbortSignal;
  maxBytes?: number;
  onBytes?: (bytes: number) => void;
  origin: string;
  /** The bounded pool, or the streams' for an exchange with no deadline. */
  dispatcher: Agent;
  finish(): void;
}

/** The exchange's own stop (its deadline, its size cap) names itself; a caller's abort stays the caller's. */
function failureOf(err: unknown, exchange: Exchange): unknown {
  if (exchange.stop.signal.aborted && !exchange.callerSignal?.aborted) return exchange.stop.signal.reason;
  return unwrap(err);
}

/**
 * The body, read only as its reader asks (nothing is buffered ahead), counted against the
 * exchange's byte cap; the exchange's timer ends with the body. Streaming callers keep streaming.
 */
function guardBody(response: Response, exchange: Exchange): Response {
  if (!response.body) {
    exchange.finish();
    return response;
  }
  const reader = response.body.getReader();
  let read = 0;
  const body = new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        let chunk: Awaited<ReturnType<typeof reader.read>>;
        try {
          chunk = await reader.read();
        } catch (err) {
          exchange.finish();
          controller.error(failureOf(err, exchange));
          return;
        }
        if (chunk.done) {
          exchange.finish();
          controller.close();
          return;
        }
        read += chunk.value.byteLength;
        exchange.onBytes?.(chunk.value.byteLength);
        if (exchange.maxBytes !== undefined && read > exchange.maxBytes) {
          const tooLarge = new EgressTooLargeError(`${exchange.origin} answered more than ${exchange.maxBytes} bytes`, exchange.maxBytes);
          exchange.stop.abort(tooLarge);
          exchange.finish();
          controller.error(tooLarge);
          return;
        }
        controller.enqueue(chunk.value);
      },
      cancel(reason) {
        exchange.finish();
        return reader.cancel(reason);
      },
    },
    { highWaterMark: 0 },
  );
  const guarded = new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers });
  // Callers resolve relative Location headers against it (the MCP client does).
  Object.defineProperty(guarded, 'url', { value: response.url });
  return guarded;
}

/** undici wraps connect failures in `TypeError: fetch failed`; the policy's refusal is what callers need to see. */
function unwrap(err: unknown): unknown {
  let current: unknown = err;
  for (let i = 0; i < 5 && current instanceof Error; i++) {
    if (current instanceof EgressRefusedError || current instanceof EgressTimeoutError) return current;
    const code = (current as NodeJS.ErrnoException).code;
    if (code === 'UND_ERR_CONNECT_TIMEOUT' || code === 'UND_ERR_HEADERS_TIMEOUT') return new EgressTimeoutError(current.message);
    current = (current as Error & { cause?: unknown }).cause;
  }
  return err;
}
