import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { join, resolve } from 'node:path';
import { AppConfig, ConfigError, parseEnvironment } from './app-config';

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
    mcpApprovalWaitSeconds: e.MCP_APPROVAL_WAIT_SECONDS,
    databasePoolSize: e.DATABASE_POOL_SIZE,
    rateLimit: {
      windowSeconds: e.RATE_LIMIT_WINDOW_SECONDS,
      perKey: e.RATE_LIMIT_PER_KEY,
      perOrg: e.RATE_LIMIT_PER_ORG,
      authFailures: e.RATE_LIMIT_AUTH_FAILURES,
    },
    httpTimeouts: { headersMs: e.HTTP_HEADERS_TIMEOUT_MS, requestMs: e.HTTP_REQUEST_TIMEOUT_MS, idleMs: e.HTTP_IDLE_TIMEOUT_MS },
    mcpAllowedOrigins: parseOrigins('MCP_ALLOWED_ORIGINS', e.MCP_ALLOWED_ORIGINS),
  };
}

/** A comma-separated list of origins, each exactly as a browser sends it (`https://host[:port]`). */
export function parseOrigins(variable: string, value: string): string[] {
  const origins = value.split(',').map((o) => o.trim()).filter((o) => o !== '');
  for (const origin of origins) {
    let parsed: URL | undefined;
    try {
      parsed = new URL(origin);
    } catch {
      parsed = undefined;
    }
    if (!parsed || parsed.origin !== origin) {
      throw new ConfigError(`Invalid environment:\n  ${variable}: "${origin}" is not an origin like https://app.example.com (scheme, host and port only)`);
    }
  }
  return origins;
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
