import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { join, resolve } from 'node:path';
import { AppConfig, ConfigError, EnvironmentVariables, parseEnvironment } from './app-config';
import { OidcConfig } from './auth-config';
import { SecretsConfig } from './database-config';
import { parseOrigins, parseTrustedProxies } from './http-config';
import { parseAllowList, splitAllowedHosts } from '../egress/egress-policy';
import { reservedSlots } from '../runs/run-slots';

/**
 * Turns the environment into the one typed config object. The platform admin token is the only
 * secret the product can invent: with the embedded database a newcomer gets one on first start;
 * with a real database, an operator must choose it.
 */
export function resolveConfig(env: NodeJS.ProcessEnv, log: (message: string) => void = () => {}): AppConfig {
  const e = parseEnvironment(env);
  let token = e.PLATFORM_ADMIN_TOKEN;
  if (!token) {
    if (e.DATABASE_URL) {
      throw new ConfigError('PLATFORM_ADMIN_TOKEN must be set when DATABASE_URL is set: the server will not invent the admin secret of a shared database.');
    }
    token = loadOrCreateAdminToken(e.DATA_DIR, log);
  }
  const allowedHosts = splitAllowedHosts(e.EGRESS_ALLOWED_HOSTS);
  const perOrg = Math.min(e.RUN_MAX_CONCURRENT, e.RUN_MAX_CONCURRENT_PER_ORG ?? Math.max(1, Math.floor(e.RUN_MAX_CONCURRENT / 4)));
  try {
    parseAllowList(allowedHosts);
  } catch (err) {
    throw new ConfigError(`Invalid environment:\n  EGRESS_ALLOWED_HOSTS: ${(err as Error).message}`);
  }
  const oidc = resolveOidc(e);
  return {
    port: e.PORT,
    host: e.HOST,
    databaseUrl: e.DATABASE_URL,
    dataDir: e.DATA_DIR,
    platformAdminToken: token,
    approvalTtlSeconds: e.APPROVAL_TTL_SECONDS,
    logLevel: e.LOG_LEVEL,
    toolTimeoutMs: e.TOOL_TIMEOUT_MS,
    toolLeaseGraceMs: e.TOOL_LEASE_GRACE_SECONDS * 1000,
    sweepIntervalMs: e.SWEEP_INTERVAL_SECONDS * 1000,
    webhookDeliveryRetentionMs: e.WEBHOOK_DELIVERY_RETENTION_DAYS * 86_400_000,
    auditRetentionMs: auditRetentionMs(e),
    apiKeyExpiryNoticeMs: e.API_KEY_EXPIRY_NOTICE_DAYS * 86_400_000,
    apiKeysCreatedPerDay: e.API_KEYS_CREATED_PER_DAY,
    webhookMaxPendingPerEndpoint: e.WEBHOOK_MAX_PENDING_PER_ENDPOINT,
    mcpApprovalWaitSeconds: e.MCP_APPROVAL_WAIT_SECONDS,
    mcpHeldCallsPerOrg: e.MCP_HELD_CALLS_PER_ORG,
    toolCallsInFlightPerOrg: e.TOOL_CALLS_IN_FLIGHT_PER_ORG,
    approvalsMaxPendingPerOrg: e.APPROVALS_MAX_PENDING_PER_ORG,
    databasePoolSize: e.DATABASE_POOL_SIZE,
    databaseStatementTimeoutMs: e.DATABASE_STATEMENT_TIMEOUT_MS,
    storage: {
      knowledgeBytesPerOrg: e.KNOWLEDGE_MAX_BYTES_PER_ORG,
      agentBytesPerOrg: e.AGENTS_MAX_BYTES_PER_ORG,
      runBytesPerOrg: e.RUNS_MAX_BYTES_PER_ORG,
      skillsPerOrg: e.SKILLS_MAX_PER_ORG,
      knowledgeCollectionsPerOrg: e.KNOWLEDGE_MAX_COLLECTIONS_PER_ORG,
      knowledgeDocumentsPerOrg: e.KNOWLEDGE_MAX_DOCUMENTS_PER_ORG,
      memoryBytesPerOrg: e.MEMORY_MAX_BYTES_PER_ORG,
    },
    rateLimit: {
      windowSeconds: e.RATE_LIMIT_WINDOW_SECONDS,
      perKey: e.RATE_LIMIT_PER_KEY,
      perOrg: e.RATE_LIMIT_PER_ORG,
      authFailures: e.RATE_LIMIT_AUTH_FAILURES,
      redisUrl: e.RATE_LIMIT_REDIS_URL,
      redisPrefix: e.RATE_LIMIT_REDIS_PREFIX,
    },
    httpTimeouts: {
      headersMs: e.HTTP_HEADERS_TIMEOUT_MS,
      requestMs: e.HTTP_REQUEST_TIMEOUT_MS,
      idleMs: e.HTTP_IDLE_TIMEOUT_MS,
      keepAliveMs: e.HTTP_KEEP_ALIVE_TIMEOUT_MS,
    },
    httpLimits: {
      maxBufferedBodyBytes: e.HTTP_MAX_BUFFERED_BODY_BYTES,
      maxConnections: e.HTTP_MAX_CONNECTIONS,
      maxHeldRequests: e.HTTP_HELD_REQUESTS_MAX,
      heldRequestsPerOrg: e.HTTP_HELD_REQUESTS_PER_ORG,
      bodyParseMsPerOrg: e.HTTP_BODY_PARSE_MS_PER_ORG,
    },
    mcpAllowedOrigins: parseOrigins(e.MCP_ALLOWED_ORIGINS) ?? [],
    trustProxy: parseTrustedProxies(e.TRUST_PROXY) ?? false,
    metricsToken: e.METRICS_TOKEN,
    metricsReuseMs: e.METRICS_REUSE_MS,
    secrets: resolveSecrets(e, log),
    egress: {
      allowedHosts,
      connectTimeoutMs: e.EGRESS_CONNECT_TIMEOUT_MS,
      requestTimeoutMs: e.EGRESS_TIMEOUT_MS,
      maxConnectionsPerOrigin: e.EGRESS_MAX_CONNECTIONS_PER_ORIGIN,
    },
    mcpToolsTtlSeconds: e.MCP_TOOLS_TTL_SECONDS,
    mcpMaxMessagesPerRequest: e.MCP_MAX_MESSAGES_PER_REQUEST,
    runs: {
      maxSteps: e.RUN_MAX_STEPS,
      leaseMs: e.RUN_LEASE_SECONDS * 1000,
      pollIntervalMs: e.RUN_POLL_INTERVAL_MS,
      maxConcurrent: e.RUN_MAX_CONCURRENT,
      maxConcurrentPerOrg: perOrg,
      reservedForNewOrgs: reservedSlots(e.RUN_MAX_CONCURRENT, perOrg, e.RUN_RESERVED_FOR_NEW_ORGS),
      modelRetries: e.RUN_MODEL_RETRIES,
      modelRetryBaseMs: e.RUN_MODEL_RETRY_BASE_MS,
      modelTimeoutMs: e.RUN_MODEL_TIMEOUT_MS,
      retentionMs: e.RUN_RETENTION_DAYS * 86_400_000,
      waitsPerOrg: e.RUN_WAITS_PER_ORG,
      maxRunningPerOrg: e.RUN_MAX_RUNNING_PER_ORG,
      maxRefusedCalls: e.RUN_MAX_REFUSED_CALLS,
    },
    corsOrigins: parseOrigins(e.CORS_ORIGINS) ?? [],
    events: {
      heartbeatMs: 15_000,
      pollMs: 5_000,
      webhookTimeoutMs: e.WEBHOOK_TIMEOUT_MS,
      webhookRetryBaseMs: e.WEBHOOK_RETRY_BASE_MS,
      webhookRetryWindowMs: e.WEBHOOK_RETRY_WINDOW_SECONDS * 1000,
    },
    ...(oidc ? { oidc } : {}),
  };
}

/** The identity provider, when one is named; an issuer without an audience is refused (any token of the provider would do). */
function resolveOidc(e: EnvironmentVariables): OidcConfig | undefined {
  if (!e.OIDC_ISSUER) {
    if (e.OIDC_AUDIENCE) throw new ConfigError('Invalid environment:\n  OIDC_AUDIENCE: is set but OIDC_ISSUER is not; set both or neither');
    if (e.OIDC_INTROSPECTION_URL) throw new ConfigError('Invalid environment:\n  OIDC_INTROSPECTION_URL: is set but OIDC_ISSUER is not');
    return undefined;
  }
  if (Boolean(e.OIDC_INTROSPECTION_URL) !== Boolean(e.OIDC_CLIENT_ID && e.OIDC_CLIENT_SECRET)) {
    throw new ConfigError(
      'Invalid environment:\n  OIDC_INTROSPECTION_URL: set it with OIDC_CLIENT_ID and OIDC_CLIENT_SECRET (the client it introspects as), or none of the three',
    );
  }
  if (!e.OIDC_AUDIENCE) {
    throw new ConfigError(
      "Invalid environment:\n  OIDC_AUDIENCE: must be set with OIDC_ISSUER (the `aud` this server's tokens carry), or every token of the provider would be accepted",
    );
  }
  return {
    issuer: e.OIDC_ISSUER,
    audience: e.OIDC_AUDIENCE,
    orgClaim: e.OIDC_ORG_CLAIM,
    rolesClaim: e.OIDC_ROLES_CLAIM,
    clockSkewSeconds: e.OIDC_CLOCK_SKEW_SECONDS,
    keyRefreshCooldownMs: 30_000,
    keysMaxAgeMs: 600_000,
    ...(e.OIDC_REQUIRED_TOKEN_TYPE ? { requireAccessTokenType: true } : {}),
    ...(e.OIDC_INTROSPECTION_URL
      ? {
          introspection: {
            url: e.OIDC_INTROSPECTION_URL,
            clientId: e.OIDC_CLIENT_ID!,
            clientSecret: e.OIDC_CLIENT_SECRET!,
            cacheMs: e.OIDC_INTROSPECTION_CACHE_SECONDS * 1000,
          },
        }
      : {}),
  };
}

function decodeKey(value: string, name: string): Buffer {
  const key = Buffer.from(value.replace(/-/g, '+').replace(/_/g, '/'), 'base64');
  if (key.length !== 32) throw new ConfigError(`Invalid environment:\n  ${name}: must be 32 bytes, base64 (openssl rand -base64 32)`);
  return key;
}

/** SECRETS_KEY (or the embedded database's key file) and SECRETS_KEY_PREVIOUS; also for `npm run secrets:reseal`. */
export function resolveSecrets(e: EnvironmentVariables, log: (message: string) => void): SecretsConfig {
  return {
    key: resolveSecretsKey(e, log),
    previousKey: e.SECRETS_KEY_PREVIOUS ? decodeKey(e.SECRETS_KEY_PREVIOUS, 'SECRETS_KEY_PREVIOUS') : undefined,
  };
}

/**
 * Like the admin token, the product invents the secrets key only for the embedded database: a
 * shared database's secrets must open on every node, so an operator chooses (and keeps) the key.
 */
function resolveSecretsKey(e: EnvironmentVariables, log: (message: string) => void): Buffer {
  if (e.SECRETS_KEY) return decodeKey(e.SECRETS_KEY, 'SECRETS_KEY');
  if (e.DATABASE_URL) {
    throw new ConfigError(
      'SECRETS_KEY must be set when DATABASE_URL is set (32 bytes, base64: openssl rand -base64 32): every node must open the secrets the others sealed.',
    );
  }
  return loadOrCreateSecretsKey(e.DATA_DIR, log);
}

export function loadOrCreateSecretsKey(dataDir: string, log: (message: string) => void): Buffer {
  const path = resolve(join(dataDir, 'secrets-key'));
  if (existsSync(path)) {
    const key = Buffer.from(readFileSync(path, 'utf8').trim(), 'base64');
    if (key.length !== 32) throw new ConfigError(`${path} holds no usable secrets key (32 bytes, base64). Deleting it makes every sealed secret unreadable.`);
    log(`secrets key: read from ${path}`);
    return key;
  }
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const key = randomBytes(32);
  writeFileSync(path, key.toString('base64') + '\n', { mode: 0o600, flag: 'wx' });
  chmodSync(path, 0o600);
  log(`secrets key: generated and written to ${path} (mode 0600); back it up with the database`);
  return key;
}

export function loadOrCreateAdminToken(dataDir: string, log: (message: string) => void): string {
  const path = resolve(join(dataDir, 'admin-token'));
  if (existsSync(path)) {
    const token = readFileSync(path, 'utf8').trim();
    if (token.length < 16) throw new ConfigError(`${path} holds no usable admin token; delete it to have a new one generated.`);
    log(`platform admin token: read from ${path}`);
    return token;
  }
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const token = 'cpa_' + randomBytes(32).toString('base64url');
  writeFileSync(path, token + '\n', { mode: 0o600, flag: 'wx' });
  chmodSync(path, 0o600);
  log(`platform admin token: generated and written to ${path} (mode 0600)`);
  return token;
}

/** AUDIT_RETENTION_DAYS in ms, once it keeps every event a webhook delivery listed may name. */
function auditRetentionMs(e: EnvironmentVariables): number {
  const ms = e.AUDIT_RETENTION_DAYS * 86_400_000;
  const deliveries = e.WEBHOOK_DELIVERY_RETENTION_DAYS * 86_400_000 + e.WEBHOOK_RETRY_WINDOW_SECONDS * 1000;
  if (ms > 0 && ms < deliveries) {
    throw new ConfigError(
      `Invalid environment:\n  AUDIT_RETENTION_DAYS: ${e.AUDIT_RETENTION_DAYS} keeps an event less long than a webhook delivery of it may be listed (WEBHOOK_DELIVERY_RETENTION_DAYS and WEBHOOK_RETRY_WINDOW_SECONDS together: ${Math.ceil(deliveries / 86_400_000)} days); set it to at least that, or 0 to keep events for good.`,
    );
  }
  return ms;
}
