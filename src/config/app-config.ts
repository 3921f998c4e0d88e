import { plainToInstance, Transform } from 'class-transformer';
import { IsIn, IsInt, IsOptional, IsString, Matches, Max, MaxLength, Min, MinLength, ValidateBy, ValidateIf, validateSync } from 'class-validator';

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

const toInt = ({ value }: { value: unknown }) => (typeof value === 'string' && /^-?\d+$/.test(value.trim()) ? Number(value.trim()) : value);
// 32 bytes are 43 base64 characters and one `=` (or 44 characters with url-safe alphabet variants).
const BASE64_32_BYTES = /^[A-Za-z0-9+/_-]{43}=?$/;
const emptyToUndefined = ({ value }: { value: unknown }) => (value === '' ? undefined : value);

/**
 * The environment as the process receives it. Every variable the product reads is declared here,
 * so a typo in a value stops the start instead of surfacing as a strange failure later.
 */
export class EnvironmentVariables {
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

  @IsOptional()
  @Transform(emptyToUndefined)
  @IsString()
  @Matches(/^postgres(ql)?:\/\//, { message: 'must be a postgres:// URL' })
  DATABASE_URL?: string;

  @IsOptional()
  @IsString()
  @MinLength(1)
  DATA_DIR: string = './.data';

  @IsOptional()
  @Transform(emptyToUndefined)
  @IsString()
  @MinLength(16, { message: 'must be at least 16 characters' })
  @MaxLength(512)
  PLATFORM_ADMIN_TOKEN?: string;

  @IsOptional()
  @Transform(toInt)
  @IsInt()
  @Min(1)
  @Max(30 * 86400)
  APPROVAL_TTL_SECONDS: number = 86400;

  @IsOptional()
  @IsIn(LOG_LEVELS)
  LOG_LEVEL: LogLevel = 'info';

  @IsOptional()
  @Transform(toInt)
  @IsInt()
  @Min(1)
  @Max(3_600_000)
  TOOL_TIMEOUT_MS: number = 30000;

  /** How long past its timeout a running call is presumed to belong to a process that died. */
  @IsOptional()
  @Transform(toInt)
  @IsInt()
  @Min(1)
  @Max(86400)
  TOOL_LEASE_GRACE_SECONDS: number = 60;

  @IsOptional()
  @Transform(toInt)
  @IsInt()
  @Min(1)
  @Max(3600)
  SWEEP_INTERVAL_SECONDS: number = 15;

  /**
   * How long an MCP tool call that needs approval is held open. Below 60 s, the request timeout
   * most MCP clients use by default, so the client gets the "still pending" answer rather than
   * a timeout error (docs/mcp.md).
   */
  @IsOptional()
  @Transform(toInt)
  @IsInt()
  @Min(0)
  @Max(3600)
  MCP_APPROVAL_WAIT_SECONDS: number = 45;

  @IsOptional()
  @Transform(toInt)
  @IsInt()
  @Min(1)
  @Max(1000)
  DATABASE_POOL_SIZE: number = 10;

  @IsOptional()
  @Transform(toInt)
  @IsInt()
  @Min(1)
  @Max(86400)
  RATE_LIMIT_WINDOW_SECONDS: number = 60;

  /** Requests one API key (or the platform token) may make per window; 0 turns the limit off. */
  @IsOptional()
  @Transform(toInt)
  @IsInt()
  @Min(0)
  @Max(10_000_000)
  RATE_LIMIT_PER_KEY: number = 1200;

  /** Requests all keys of one organization may make together per window; 0 turns it off. */
  @IsOptional()
  @Transform(toInt)
  @IsInt()
  @Min(0)
  @Max(10_000_000)
  RATE_LIMIT_PER_ORG: number = 6000;

  /** Failed authentications one client address may make per window; 0 turns it off. */
  @IsOptional()
  @Transform(toInt)
  @IsInt()
  @Min(0)
  @Max(10_000_000)
  RATE_LIMIT_AUTH_FAILURES: number = 30;

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
   * Origins (comma-separated, e.g. `https://app.example.com`) whose browsers may call the MCP
   * endpoints; a request with another `Origin` is refused (DNS rebinding). Requests without
   * `Origin` (every non-browser client) are not affected.
   */
  @IsOptional()
  @IsString()
  @MaxLength(10_000)
  @ValidateBy({
    name: 'isOriginList',
    validator: {
      validate: (v: unknown) => typeof v === 'string' && parseOrigins(v) !== undefined,
      defaultMessage: () => 'must be comma-separated origins such as https://app.example.com (scheme, host and optional port; no path)',
    },
  })
  MCP_ALLOWED_ORIGINS: string = '';
  /** Set: every node counts rate limits in this Redis, so limits hold across nodes. Unset: per process. */
  @IsOptional()
  @Transform(emptyToUndefined)
  @IsString()
  @MaxLength(2048)
  @Matches(/^rediss?:\/\/[^\s]+$/, { message: 'must be a redis:// or rediss:// URL' })
  RATE_LIMIT_REDIS_URL?: string;

  /** Prefix of every rate-limit key in Redis, so several deployments (or test runs) can share one Redis. */
  @IsOptional()
  @IsString()
  @Matches(/^[A-Za-z0-9:._-]{1,64}$/, { message: 'must be 1 to 64 of A-Z a-z 0-9 : . _ -' })
  RATE_LIMIT_REDIS_PREFIX: string = 'cp:rl:';

  /** Set: GET /metrics answers only `Authorization: Bearer <METRICS_TOKEN>`. */
  @IsOptional()
  @Transform(emptyToUndefined)
  @IsString()
  @MinLength(16, { message: 'must be at least 16 characters' })
  @MaxLength(512)
  @Matches(/^\S+$/, { message: 'must not contain spaces' })
  METRICS_TOKEN?: string;

  /** 32 bytes, base64: the key secrets are sealed under (AES-256-GCM). */
  @IsOptional()
  @Transform(emptyToUndefined)
  @IsString()
  @Matches(BASE64_32_BYTES, { message: 'must be 32 bytes, base64 (openssl rand -base64 32)' })
  SECRETS_KEY?: string;

  /** The key before the last rotation: what it sealed still opens. */
  @IsOptional()
  @Transform(emptyToUndefined)
  @IsString()
  @Matches(BASE64_32_BYTES, { message: 'must be 32 bytes, base64 (openssl rand -base64 32)' })
  SECRETS_KEY_PREVIOUS?: string;

  /**
   * Comma-separated hosts, IP addresses or CIDR ranges that outbound connections may reach although
   * private or loopback (each item is parsed, and a bad one named, by resolveConfig).
   */
  @IsOptional()
  @IsString()
  @MaxLength(10_000)
  EGRESS_ALLOWED_HOSTS: string = '';

  @IsOptional()
  @Transform(toInt)
  @IsInt()
  @Min(1)
  @Max(600_000)
  EGRESS_CONNECT_TIMEOUT_MS: number = 10_000;

  /**
   * How long an outbound request may wait for the response headers (a caller may ask for less), and,
   * unless its caller allows a stream longer (a model's answer: RUN_MODEL_TIMEOUT_MS), for its body too.
   */
  @IsOptional()
  @Transform(toInt)
  @IsInt()
  @Min(1)
  @Max(3_600_000)
  EGRESS_TIMEOUT_MS: number = 30_000;

  /**
   * Sockets a node holds open to one origin at once for outbound requests; past it requests wait
   * for one (within their own timeouts). Streams meant to stay open (an MCP session's events) are
   * not counted: each is one per session, and they would keep every other request out.
   */
  @IsOptional()
  @Transform(toInt)
  @IsInt()
  @Min(1)
  @Max(100_000)
  EGRESS_MAX_CONNECTIONS_PER_ORIGIN: number = 256;

  /** An MCP connection's tool list older than this is listed again before a call uses it. */
  @IsOptional()
  @Transform(toInt)
  @IsInt()
  @Min(0)
  @Max(86400 * 30)
  MCP_TOOLS_TTL_SECONDS: number = 300;
  /** Model calls one run may make; then it fails with `max_steps`. */
  @IsOptional()
  @Transform(toInt)
  @IsInt()
  @Min(1)
  @Max(10_000)
  RUN_MAX_STEPS: number = 32;

  /** How long a node holds a run it steps without renewing; a node that dies is taken over after this. */
  @IsOptional()
  @Transform(toInt)
  @IsInt()
  @Min(1)
  @Max(3600)
  RUN_LEASE_SECONDS: number = 30;

  /** How often each node looks for runs to take (decided on another node, abandoned, or due for a retry). */
  @IsOptional()
  @Transform(toInt)
  @IsInt()
  @Min(50)
  @Max(60_000)
  RUN_POLL_INTERVAL_MS: number = 1000;

  /** Runs one node steps at once. */
  @IsOptional()
  @Transform(toInt)
  @IsInt()
  @Min(1)
  @Max(1000)
  RUN_MAX_CONCURRENT: number = 16;

  /**
   * Runs of one organization one node steps at once (unset: a quarter of RUN_MAX_CONCURRENT, at
   * least 1; at most RUN_MAX_CONCURRENT). A run holds its slot through its model's retries and
   * slow tools, so without it one organization's hung provider took every slot for minutes.
   */
  @IsOptional()
  @Transform((p) => toInt({ value: emptyToUndefined(p) }))
  @IsInt()
  @Min(1)
  @Max(1000)
  RUN_MAX_CONCURRENT_PER_ORG?: number;

  /**
   * Of RUN_MAX_CONCURRENT, the slots only organizations stepping no run on the node may take, one
   * each (unset: a quarter, at least 1, at most RUN_MAX_CONCURRENT less RUN_MAX_CONCURRENT_PER_ORG;
   * kept below RUN_MAX_CONCURRENT). Without it four organizations whose providers never answered
   * held every slot of every node.
   */
  @IsOptional()
  @Transform((p) => toInt({ value: emptyToUndefined(p) }))
  @IsInt()
  @Min(0)
  @Max(1000)
  RUN_RESERVED_FOR_NEW_ORGS?: number;

  /** Retries of a model call that failed with 408/409/429/5xx, a broken answer or no connection. */
  @IsOptional()
  @Transform(toInt)
  @IsInt()
  @Min(0)
  @Max(20)
  RUN_MODEL_RETRIES: number = 4;

  /** The first backoff (doubled per retry, with jitter, `Retry-After` respected). */
  @IsOptional()
  @Transform(toInt)
  @IsInt()
  @Min(1)
  @Max(60_000)
  RUN_MODEL_RETRY_BASE_MS: number = 1000;

  @IsOptional()
  @Transform(toInt)
  @IsInt()
  @Min(1000)
  @Max(3_600_000)
  RUN_MODEL_TIMEOUT_MS: number = 120_000;

  /** Browser origins allowed to call the API, comma-separated (`https://app.example.com`). */
  @IsOptional()
  @IsString()
  @ValidateBy({
    name: 'isOriginList',
    validator: {
      validate: (v: unknown) => typeof v === 'string' && parseOrigins(v) !== undefined,
      defaultMessage: () => 'must be comma-separated origins such as https://app.example.com (scheme, host and optional port; no path)',
    },
  })
  CORS_ORIGINS: string = '';

  /**
   * The identity provider whose JWT access tokens are accepted beside API keys (its OpenID
   * discovery document is read from `<issuer>/.well-known/openid-configuration`). Unset: API keys only.
   */
  @ValidateIf((_o: unknown, v: unknown) => v !== '' && v !== undefined)
  @Transform(emptyToUndefined)
  @IsString()
  @MaxLength(2048)
  @Matches(/^https?:\/\/[^\s"]+$/, { message: 'must be an https:// URL (the issuer exactly as the tokens name it)' })
  // An empty default (read as unset) makes it a key of a fresh instance, which is how parseEnvironment knows what to read.
  OIDC_ISSUER?: string = '';

  /** The `aud` the tokens must carry (required with OIDC_ISSUER). */
  @ValidateIf((_o: unknown, v: unknown) => v !== '' && v !== undefined)
  @Transform(emptyToUndefined)
  @IsString()
  @MaxLength(2048)
  @Matches(/^\S+$/, { message: 'must not contain spaces' })
  OIDC_AUDIENCE?: string = '';

  /** The claim that names the organization, by its id or its slug. */
  @IsOptional()
  @IsString()
  @Matches(/^\S{1,200}$/, { message: 'must be a claim name (1 to 200 characters, no spaces)' })
  OIDC_ORG_CLAIM: string = 'org_id';

  /** The claim that lists the principal's roles (an array, or a space- or comma-separated string). */
  @IsOptional()
  @IsString()
  @Matches(/^\S{1,200}$/, { message: 'must be a claim name (1 to 200 characters, no spaces)' })
  OIDC_ROLES_CLAIM: string = 'roles';

  /** How far the clocks of this server and the identity provider may disagree when `exp` and `nbf` are checked. */
  @IsOptional()
  @Transform(toInt)
  @IsInt()
  @Min(0)
  @Max(300)
  OIDC_CLOCK_SKEW_SECONDS: number = 60;

  /** How long one webhook request may take, connection included. */
  @IsOptional()
  @Transform(toInt)
  @IsInt()
  @Min(100)
  @Max(120_000)
  WEBHOOK_TIMEOUT_MS: number = 10_000;

  /** The wait before the second attempt; each later wait is three times the one before (at most an hour), with jitter. */
  @IsOptional()
  @Transform(toInt)
  @IsInt()
  @Min(10)
  @Max(3_600_000)
  WEBHOOK_RETRY_BASE_MS: number = 5_000;

  /** How long a delivery is retried before it is `failed`. */
  @IsOptional()
  @Transform(toInt)
  @IsInt()
  @Min(1)
  @Max(30 * 86400)
  WEBHOOK_RETRY_WINDOW_SECONDS: number = 86_400;

  /**
   * How long a finished delivery (`succeeded`, `failed`) and its attempts are kept, from when it
   * finished; pending ones are kept until they finish. A week: the log is for finding out why a
   * receiver refused what it did, over a weekend too; the events stay in the audit log.
   */
  @IsOptional()
  @Transform(toInt)
  @IsInt()
  @Min(1)
  @Max(365)
  WEBHOOK_DELIVERY_RETENTION_DAYS: number = 7;

  /**
   * Pending deliveries one endpoint may have. At it, its organization's new events are not written
   * as deliveries for it (counted, shown on the endpoint, audited) until half have drained: a
   * receiver that hangs or is slow no longer grows the table without limit (~450 bytes a delivery).
   */
  @IsOptional()
  @Transform(toInt)
  @IsInt()
  @Min(10)
  @Max(10_000_000)
  WEBHOOK_MAX_PENDING_PER_ENDPOINT: number = 10_000;
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
}

export const DEFAULT_HTTP_LIMITS: HttpLimits = { maxBufferedBodyBytes: 64 * 1024 * 1024, maxConnections: 2_000 };

export interface AppConfig {
  port: number;
  host: string;
  /** Unset: the embedded database in `dataDir`. */
  databaseUrl?: string;
  dataDir: string;
  /** Resolved before the app module is built (generated for the embedded database when unset). */
  platformAdminToken: string;
  approvalTtlSeconds: number;
  logLevel: LogLevel;
  toolTimeoutMs: number;
  /** A running call's lease is toolTimeoutMs + this; past it, the sweeper marks it interrupted. */
  toolLeaseGraceMs: number;
  sweepIntervalMs: number;
  /** A finished webhook delivery older than this (from when it finished) is removed by the sweep. */
  webhookDeliveryRetentionMs: number;
  /** WEBHOOK_MAX_PENDING_PER_ENDPOINT: an endpoint with this many pending deliveries gets no new ones until half have drained. */
  webhookMaxPendingPerEndpoint: number;
  mcpApprovalWaitSeconds: number;
  databasePoolSize: number;
  rateLimit: RateLimitConfig;
  /** Unset (tests): DEFAULT_HTTP_TIMEOUTS. */
  httpTimeouts?: HttpTimeouts;
  /** Unset (tests): DEFAULT_HTTP_LIMITS. */
  httpLimits?: HttpLimits;
  /** Origins allowed to call MCP endpoints from a browser; unset: none. */
  mcpAllowedOrigins?: string[];
  runs: RunsConfig;
  /** Unset: /metrics is open (bind it to a private network, or set it). */
  metricsToken?: string;
  secrets: SecretsConfig;
  egress: EgressConfig;
  /** An MCP connection's tools older than this are listed again before a call. */
  mcpToolsTtlSeconds: number;
  /** The most bytes read of one answer of an MCP server; unset: the pool's MAX_RESPONSE_BYTES (tests set less). */
  mcpMaxResponseBytes?: number;
  /** How long a local MCP server's process may sit unused before it is stopped; unset: the pool's IDLE_PROCESS_MS (tests set less). */
  mcpIdleProcessMs?: number;
  /** Local MCP servers' processes one node runs at once; unset: the pool's MAX_LOCAL_PROCESSES (tests set less). */
  mcpMaxLocalProcesses?: number;
  /** Origins (`scheme://host[:port]`) whose browser apps may call the API; empty: none. */
  corsOrigins: string[];
  events: EventsConfig;
  /** Unset: no identity provider; bearer tokens are API keys (and the platform token) only. */
  oidc?: OidcConfig;
}

export interface OidcConfig {
  /** Exactly as the tokens' `iss` names it. */
  issuer: string;
  audience: string;
  orgClaim: string;
  rolesClaim: string;
  clockSkewSeconds: number;
  /** The least time between two fetches of the provider's keys, however many unknown `kid`s arrive. */
  keyRefreshCooldownMs: number;
  /** Keys older than this are fetched again before the next verification (rotation without a new `kid` in sight). */
  keysMaxAgeMs: number;
}

export interface SecretsConfig {
  /** 32 bytes: what seals new secrets. */
  key: Buffer;
  /** 32 bytes: opens what was sealed before a rotation. */
  previousKey?: Buffer;
}

export interface EgressConfig {
  /** Host names (lower case), IP addresses and CIDR ranges exempt from the private-address rule. */
  allowedHosts: string[];
  connectTimeoutMs: number;
  requestTimeoutMs: number;
  /** Unset (tests): the egress service's MAX_CONNECTIONS_PER_ORIGIN. */
  maxConnectionsPerOrigin?: number;
}

export interface RunsConfig {
  maxSteps: number;
  leaseMs: number;
  pollIntervalMs: number;
  maxConcurrent: number;
  /** Of those, the most of one organization's (resolved: never more than maxConcurrent). */
  maxConcurrentPerOrg: number;
  /** Of maxConcurrent, the slots only organizations stepping none here may take, one each (resolved: below maxConcurrent). */
  reservedForNewOrgs: number;
  modelRetries: number;
  modelRetryBaseMs: number;
  modelTimeoutMs: number;
}

export const DEFAULT_RUNS_CONFIG: RunsConfig = {
  maxSteps: 32,
  leaseMs: 30_000,
  pollIntervalMs: 1000,
  maxConcurrent: 16,
  maxConcurrentPerOrg: 4,
  reservedForNewOrgs: 4,
  modelRetries: 4,
  modelRetryBaseMs: 1000,
  modelTimeoutMs: 120_000,
};

export interface EventsConfig {
  /** A comment on every open event stream this often (API.md: 15 s). */
  heartbeatMs: number;
  /** How often a stream and the webhook dispatcher look for events nobody woke them for. */
  pollMs: number;
  webhookTimeoutMs: number;
  webhookRetryBaseMs: number;
  webhookRetryWindowMs: number;
}

export interface RateLimitConfig {
  windowSeconds: number;
  /** 0 = off. */
  perKey: number;
  perOrg: number;
  authFailures: number;
  /** Unset: counted per process. */
  redisUrl?: string;
  redisPrefix: string;
}

export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

/** The variables without a default (so not keys of a fresh instance) whose values are secrets. */
const SECRET_VARIABLES = ['DATABASE_URL', 'PLATFORM_ADMIN_TOKEN', 'SECRETS_KEY', 'SECRETS_KEY_PREVIOUS', 'RATE_LIMIT_REDIS_URL', 'METRICS_TOKEN'] as const;

/** Parses the environment; throws a ConfigError that names every bad variable. */
export function parseEnvironment(env: NodeJS.ProcessEnv): EnvironmentVariables {
  const known = Object.keys(new EnvironmentVariables());
  const raw: Record<string, unknown> = {};
  for (const key of [...known, ...SECRET_VARIABLES]) {
    if (env[key] !== undefined) raw[key] = env[key];
  }
  const parsed = plainToInstance(EnvironmentVariables, raw);
  const errors = validateSync(parsed, { whitelist: false });
  if (errors.length > 0) {
    // A secret's value never reaches the log line that refuses it (a database URL holds a password).
    const got = (e: { property: string; value?: unknown }) =>
      (SECRET_VARIABLES as readonly string[]).includes(e.property) ? 'value not shown' : `got ${JSON.stringify(e.value)}`;
    const lines = errors.map((e) => `${e.property}: ${Object.values(e.constraints ?? {}).join('; ')} (${got(e)})`);
    throw new ConfigError(`Invalid environment:\n  ${lines.join('\n  ')}`);
  }
  return parsed;
}

export const APP_CONFIG = Symbol('APP_CONFIG');
