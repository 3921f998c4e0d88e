import { Transform } from 'class-transformer';
import { IsInt, IsOptional, IsString, Max, MaxLength, Min, MinLength, ValidateBy } from 'class-validator';
import { isIP } from 'node:net';
import { emptyToUndefined, toInt } from './env-transforms';
import { DEFAULT_BODY_PARSE_MS_PER_ORG } from '../common/parse-time';

/** The listener, what it takes in at once, and which browser origins may call it. */
export class HttpVariables {
  @IsOptional()
  @Transform(toInt)
  @IsInt()
  @Min(0)
  @Max(65535)
  PORT: number = 3000;

  @IsOptional()
  @IsString()
  @MinLength(1)
  HOST: string = '127.0.0.1';

  /** How long a client may take to send a request's headers (then 408). */
  @IsOptional()
  @Transform(toInt)
  @IsInt()
  @Min(100)
  @Max(600_000)
  HTTP_HEADERS_TIMEOUT_MS: number = 10_000;

  /** How long a client may take to send a whole request, headers and body (then 408). */
  @IsOptional()
  @Transform(toInt)
  @IsInt()
  @Min(100)
  @Max(3_600_000)
  HTTP_REQUEST_TIMEOUT_MS: number = 30_000;

  /** How long a connection may stay silent (no bytes either way) before it is closed. */
  @IsOptional()
  @Transform(toInt)
  @IsInt()
  @Min(100)
  @Max(3_600_000)
  HTTP_IDLE_TIMEOUT_MS: number = 60_000;

  /**
   * How long a connection is kept, idle, after an answer, for the client's next request. Behind a
   * load balancer, longer than its idle timeout (docs/operations.md).
   */
  @IsOptional()
  @Transform(toInt)
  @IsInt()
  @Min(1000)
  @Max(3_600_000)
  HTTP_KEEP_ALIVE_TIMEOUT_MS: number = 5_000;

  /** Connections the node holds open at once; past it a new one is closed unanswered. Keep it under the file-descriptor limit. */
  @IsOptional()
  @Transform(toInt)
  @IsInt()
  @Min(1)
  @Max(10_000_000)
  HTTP_MAX_CONNECTIONS: number = 2_000;

  /**
   * Of HTTP_MAX_CONNECTIONS, the requests held open on purpose (streams, waits, tool calls in
   * progress) of all organizations at once; the rest stay for every other request and the health
   * checks (unset: three quarters, at least 1; at most HTTP_MAX_CONNECTIONS).
   */
  @IsOptional()
  @Transform((p) => toInt({ value: emptyToUndefined(p) }))
  @IsInt()
  @Min(1)
  @Max(10_000_000)
  HTTP_HELD_REQUESTS_MAX?: number;

  /** Of HTTP_HELD_REQUESTS_MAX, one organization's at once (unset: a quarter, at least 1). */
  @IsOptional()
  @Transform((p) => toInt({ value: emptyToUndefined(p) }))
  @IsInt()
  @Min(1)
  @Max(10_000_000)
  HTTP_HELD_REQUESTS_PER_ORG?: number;

  /**
   * Bytes of request bodies the node holds at once while reading them, all requests together;
   * past it a body is refused 503 with Retry-After. At least one whole body (1 MiB).
   */
  @IsOptional()
  @Transform(toInt)
  @IsInt()
  @Min(1024 * 1024)
  @Max(64 * 1024 * 1024 * 1024)
  HTTP_MAX_BUFFERED_BODY_BYTES: number = 64 * 1024 * 1024;

  /**
   * Milliseconds a second of the event loop one organization's request bodies may take to parse on
   * a node, on average (common/parse-time.ts); past a burst of twice that, its next body is 503 with
   * Retry-After until it has drained. 0: not limited.
   */
  @IsOptional()
  @Transform(toInt)
  @IsInt()
  @Min(0)
  @Max(1000)
  HTTP_BODY_PARSE_MS_PER_ORG: number = DEFAULT_BODY_PARSE_MS_PER_ORG;

  /**
   * Origins (comma-separated, e.g. `https://app.example.com`) whose browsers may call the MCP
   * endpoints; a request with another `Origin` is refused (DNS rebinding). Requests without
   * `Origin` (every non-browser client) are not affected.
   */
  @IsOptional()
  @IsString()
  @MaxLength(10_000)
  @IsOriginList()
  MCP_ALLOWED_ORIGINS: string = '';

  /**
   * The proxies in front of the node whose `X-Forwarded-For`, `X-Forwarded-Proto` and
   * `X-Forwarded-Host` are believed: comma-separated addresses or CIDR ranges
   * (`10.0.0.0/8,192.168.1.5`), or the number of proxies in front (`1`). Unset: none, and a client's
   * own headers change nothing (the address limits count, the sign-in metadata names).
   */
  @IsOptional()
  @IsString()
  @MaxLength(10_000)
  @IsTrustedProxies()
  TRUST_PROXY: string = '';

  /** Browser origins allowed to call the API, comma-separated (`https://app.example.com`). */
  @IsOptional()
  @IsString()
  @IsOriginList()
  CORS_ORIGINS: string = '';
}

function IsTrustedProxies(): PropertyDecorator {
  return ValidateBy({
    name: 'isTrustedProxies',
    validator: {
      validate: (v: unknown) => typeof v === 'string' && parseTrustedProxies(v) !== undefined,
      defaultMessage: () => 'must be comma-separated addresses or CIDR ranges of the proxies in front (10.0.0.0/8,192.168.1.5), or their number (1 to 10)',
    },
  });
}

/**
 * TRUST_PROXY as Fastify's `trustProxy`: false when unset, the number of proxies in front, or the
 * list of addresses and ranges; undefined when it is none of these. Never `true`: believing every
 * hop lets any client choose the address its limits are counted under.
 */
export function parseTrustedProxies(value: string): false | number | string[] | undefined {
  const text = value.trim();
  if (text === '') return false;
  if (/^\d+$/.test(text)) {
    const hops = Number(text);
    return hops >= 1 && hops <= 10 ? hops : undefined;
  }
  const parts = text.split(',').map((p) => p.trim());
  for (const part of parts) {
    const [address, prefix, extra] = part.split('/');
    const family = isIP(address);
    if (family === 0 || extra !== undefined) return undefined;
    if (prefix !== undefined && !(/^\d{1,3}$/.test(prefix) && Number(prefix) <= (family === 4 ? 32 : 128))) return undefined;
  }
  return parts;
}

function IsOriginList(): PropertyDecorator {
  return ValidateBy({
    name: 'isOriginList',
    validator: {
      validate: (v: unknown) => typeof v === 'string' && parseOrigins(v) !== undefined,
      defaultMessage: () => 'must be comma-separated origins such as https://app.example.com (scheme, host and optional port; no path)',
    },
  });
}

/** `CORS_ORIGINS` as the list of origins it names, or undefined when one is not an origin. */
export function parseOrigins(value: string): string[] | undefined {
  const origins: string[] = [];
  for (const part of value
    .split(',')
    .map((p) => p.trim())
    .filter((p) => p !== '')) {
    let url: URL;
    try {
      url = new URL(part);
    } catch {
      return undefined;
    }
    if ((url.protocol !== 'https:' && url.protocol !== 'http:') || url.origin !== part.replace(/\/$/, '') || url.username || url.password) return undefined;
    origins.push(url.origin);
  }
  return origins;
}

export interface HttpTimeouts {
  headersMs: number;
  requestMs: number;
  idleMs: number;
  /** An idle connection between two requests. */
  keepAliveMs: number;
}

export const DEFAULT_HTTP_TIMEOUTS: HttpTimeouts = { headersMs: 10_000, requestMs: 30_000, idleMs: 60_000, keepAliveMs: 5_000 };

/** What one node takes in at once, whoever sends it. */
export interface HttpLimits {
  /** Bytes of request bodies being read, all requests together (common/body-budget.ts). */
  maxBufferedBodyBytes: number;
  /** Open connections, idle ones included (app.factory.ts). */
  maxConnections: number;
  /** Requests held open on purpose, all organizations together (HeldRequests); unset: derived below. */
  maxHeldRequests?: number;
  /** Of those, one organization's. */
  heldRequestsPerOrg?: number;
  /** Ms a second one organization's bodies may take to parse (common/parse-time.ts); unset or 0: not limited. */
  bodyParseMsPerOrg?: number;
}

export const DEFAULT_HTTP_LIMITS: HttpLimits = { maxBufferedBodyBytes: 64 * 1024 * 1024, maxConnections: 2_000 };

/**
 * The node's budget of held requests and one organization's share: three quarters of the
 * connections (so that a quarter always answers everything else) and a quarter of that (so that
 * four organizations' streams and waits, not one's, fill it), unless set; never past the connections.
 */
export function heldRequestLimits(limits: HttpLimits): { max: number; perOrg: number } {
  const max = Math.min(limits.maxConnections, limits.maxHeldRequests ?? Math.max(1, Math.floor((limits.maxConnections * 3) / 4)));
  return { max, perOrg: Math.min(max, limits.heldRequestsPerOrg ?? Math.max(1, Math.floor(max / 4))) };
}
