import { plainToInstance } from 'class-transformer';
import { validateSync } from 'class-validator';
import type { OidcConfig } from './auth-config';
import type { SecretsConfig, StorageLimits } from './database-config';
import type { EgressConfig } from './egress-config';
import { EventsConfig, EventsVariables } from './events-config';
import type { HttpLimits, HttpTimeouts } from './http-config';
import type { RateLimitConfig } from './rate-limit-config';
import type { RunsConfig } from './runs-config';
import type { LogLevel } from './telemetry-config';

/**
 * The environment as the process receives it. Every variable the product reads is declared in one
 * of its sections (`*-config.ts` beside this file, one area each), so a typo in a value stops the
 * start instead of surfacing as a strange failure later.
 *
 * The sections extend one another, HttpVariables first and EventsVariables last, because
 * class-validator and class-transformer read a class's decorators up its prototype chain: that
 * makes this one class to validate, and one fresh instance whose keys are every variable.
 */
export class EnvironmentVariables extends EventsVariables {}

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
  /** AUDIT_RETENTION_DAYS in ms: an audit event older is removed by the sweep; unset or 0: kept for good. */
  auditRetentionMs?: number;
  /** API_KEY_EXPIRY_NOTICE_DAYS in ms (unset, in tests: 7 days); 0: no `api_key.expiring`. */
  apiKeyExpiryNoticeMs?: number;
  /** API_KEYS_CREATED_PER_DAY (1,000 when unset): keys an organization may make in any 24 hours; past it `429 rate_limited`. */
  apiKeysCreatedPerDay?: number;
  /** WEBHOOK_MAX_PENDING_PER_ENDPOINT: an endpoint with this many pending deliveries gets no new ones until half have drained. */
  webhookMaxPendingPerEndpoint: number;
  mcpApprovalWaitSeconds: number;
  /** MCP_HELD_CALLS_PER_ORG (default 64 when unset): past it an MCP call needing approval is answered "still pending" at once. */
  mcpHeldCallsPerOrg?: number;
  /** TOOL_CALLS_IN_FLIGHT_PER_ORG (default 128 when unset): past it a REST or MCP tool call is 429 rate_limited. */
  toolCallsInFlightPerOrg?: number;
  /** APPROVALS_MAX_PENDING_PER_ORG (default 10,000 when unset): past it a REST or MCP call that would wait for approval is 429 rate_limited. */
  approvalsMaxPendingPerOrg?: number;
  databasePoolSize: number;
  /** DATABASE_STATEMENT_TIMEOUT_MS for the pool's connections; unset or 0: none (tests set theirs). */
  databaseStatementTimeoutMs?: number;
  /** Unset (tests): DEFAULT_STORAGE_LIMITS. */
  storage?: StorageLimits;
  rateLimit: RateLimitConfig;
  /** Unset (tests): DEFAULT_HTTP_TIMEOUTS. */
  httpTimeouts?: HttpTimeouts;
  /** Unset (tests): DEFAULT_HTTP_LIMITS. */
  httpLimits?: HttpLimits;
  /** TRUST_PROXY as Fastify takes it; unset: false (no forwarded header believed). */
  trustProxy?: false | number | string[];
  /** Origins allowed to call MCP endpoints from a browser; unset: none. */
  mcpAllowedOrigins?: string[];
  runs: RunsConfig;
  /** Unset: /metrics is open (bind it to a private network, or set it). */
  metricsToken?: string;
  /** METRICS_REUSE_MS; unset (tests): 0, every scrape serializes the registry (one at a time). */
  metricsReuseMs?: number;
  secrets: SecretsConfig;
  egress: EgressConfig;
  /** An MCP connection's tools older than this are listed again before a call. */
  mcpToolsTtlSeconds: number;
  /** The most bytes read of one answer of an MCP server; unset: the pool's MAX_RESPONSE_BYTES (tests set less). */
  mcpMaxResponseBytes?: number;
  /** Messages an MCP server may send beside a request's answer, and on a session's event stream per minute; unset: the pool's MAX_MESSAGES_PER_REQUEST. */
  mcpMaxMessagesPerRequest?: number;
  /** How long an MCP client (a local server's process, a remote session) may sit unused before it is closed; unset: the pool's IDLE_PROCESS_MS (tests set less). */
  mcpIdleProcessMs?: number;
  /** Local MCP servers' processes one node runs at once; unset: the pool's MAX_LOCAL_PROCESSES (tests set less). */
  mcpMaxLocalProcesses?: number;
  /** Origins (`scheme://host[:port]`) whose browser apps may call the API; empty: none. */
  corsOrigins: string[];
  events: EventsConfig;
  /** Unset: no identity provider; bearer tokens are API keys (and the platform token) only. */
  oidc?: OidcConfig;
}

export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

/**
 * The variables whose values are secrets, never shown when refused; read from the environment here
 * too, since those without a default are not keys of a fresh instance.
 */
const SECRET_VARIABLES = [
  'DATABASE_URL',
  'PLATFORM_ADMIN_TOKEN',
  'SECRETS_KEY',
  'SECRETS_KEY_PREVIOUS',
  'RATE_LIMIT_REDIS_URL',
  'METRICS_TOKEN',
  'OIDC_CLIENT_SECRET',
] as const;

/** Parses the environment; throws a ConfigError that names every bad variable. */
export function parseEnvironment(env: NodeJS.ProcessEnv): EnvironmentVariables {
  const known = Object.keys(new EnvironmentVariables());
  const raw: Record<string, unknown> = {};
  for (const key of new Set([...known, ...SECRET_VARIABLES])) {
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
