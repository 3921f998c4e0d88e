import { plainToInstance, Transform } from 'class-transformer';
import { IsIn, IsInt, IsOptional, IsString, Matches, Max, MaxLength, Min, MinLength, validateSync } from 'class-validator';

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

const toInt = ({ value }: { value: unknown }) =>
  typeof value === 'string' && /^-?\d+$/.test(value.trim()) ? Number(value.trim()) : value;
const emptyToUndefined = ({ value }: { value: unknown }) => (value === '' ? undefined : value);

/**
 * The environment as the process receives it. Every variable the product reads is declared here,
 * so a typo in a value stops the start instead of surfacing as a strange failure later.
 */
export class EnvironmentVariables {
  @IsOptional() @Transform(toInt) @IsInt() @Min(0) @Max(65535)
  PORT: number = 3000;

  @IsOptional() @IsString() @MinLength(1)
  HOST: string = '127.0.0.1';

  @IsOptional() @Transform(emptyToUndefined) @IsString() @Matches(/^postgres(ql)?:\/\//, { message: 'must be a postgres:// URL' })
  DATABASE_URL?: string;

  @IsOptional() @IsString() @MinLength(1)
  DATA_DIR: string = './.data';

  @IsOptional() @Transform(emptyToUndefined) @IsString() @MinLength(16, { message: 'must be at least 16 characters' }) @MaxLength(512)
  PLATFORM_ADMIN_TOKEN?: string;

  @IsOptional() @Transform(toInt) @IsInt() @Min(1) @Max(30 * 86400)
  APPROVAL_TTL_SECONDS: number = 86400;

  @IsOptional() @IsIn(LOG_LEVELS)
  LOG_LEVEL: LogLevel = 'info';

  @IsOptional() @Transform(toInt) @IsInt() @Min(1) @Max(3_600_000)
  TOOL_TIMEOUT_MS: number = 30000;

  /** How long past its timeout a running call is presumed to belong to a process that died. */
  @IsOptional() @Transform(toInt) @IsInt() @Min(1) @Max(86400)
  TOOL_LEASE_GRACE_SECONDS: number = 60;

  @IsOptional() @Transform(toInt) @IsInt() @Min(1) @Max(3600)
  SWEEP_INTERVAL_SECONDS: number = 15;

  @IsOptional() @Transform(toInt) @IsInt() @Min(0) @Max(3600)
  MCP_APPROVAL_WAIT_SECONDS: number = 60;

  @IsOptional() @Transform(toInt) @IsInt() @Min(1) @Max(1000)
  DATABASE_POOL_SIZE: number = 10;

  @IsOptional() @Transform(toInt) @IsInt() @Min(1) @Max(86400)
  RATE_LIMIT_WINDOW_SECONDS: number = 60;

  /** Requests one API key (or the platform token) may make per window; 0 turns the limit off. */
  @IsOptional() @Transform(toInt) @IsInt() @Min(0) @Max(10_000_000)
  RATE_LIMIT_PER_KEY: number = 1200;

  /** Requests all keys of one organization may make together per window; 0 turns it off. */
  @IsOptional() @Transform(toInt) @IsInt() @Min(0) @Max(10_000_000)
  RATE_LIMIT_PER_ORG: number = 6000;

  /** Failed authentications one client address may make per window; 0 turns it off. */
  @IsOptional() @Transform(toInt) @IsInt() @Min(0) @Max(10_000_000)
  RATE_LIMIT_AUTH_FAILURES: number = 30;

  /** How long a client may take to send a request's headers (then 408). */
  @IsOptional() @Transform(toInt) @IsInt() @Min(100) @Max(600_000)
  HTTP_HEADERS_TIMEOUT_MS: number = 10_000;

  /** How long a client may take to send a whole request, headers and body (then 408). */
  @IsOptional() @Transform(toInt) @IsInt() @Min(100) @Max(3_600_000)
  HTTP_REQUEST_TIMEOUT_MS: number = 30_000;

  /** How long a connection may stay silent (no bytes either way) before it is closed. */
  @IsOptional() @Transform(toInt) @IsInt() @Min(100) @Max(3_600_000)
  HTTP_IDLE_TIMEOUT_MS: number = 60_000;

  /**
   * Origins (comma-separated, e.g. `https://app.example.com`) whose browsers may call the MCP
   * endpoints; a request with another `Origin` is refused (DNS rebinding). Requests without
   * `Origin` (every non-browser client) are not affected.
   */
  @IsOptional() @IsString() @MaxLength(10_000)
  MCP_ALLOWED_ORIGINS: string = '';
}

export interface HttpTimeouts {
  headersMs: number;
  requestMs: number;
  idleMs: number;
}

export const DEFAULT_HTTP_TIMEOUTS: HttpTimeouts = { headersMs: 10_000, requestMs: 30_000, idleMs: 60_000 };

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
  mcpApprovalWaitSeconds: number;
  databasePoolSize: number;
  rateLimit: RateLimitConfig;
  /** Unset (tests): DEFAULT_HTTP_TIMEOUTS. */
  httpTimeouts?: HttpTimeouts;
  /** Origins allowed to call MCP endpoints from a browser; unset: none. */
  mcpAllowedOrigins?: string[];
}

export interface RateLimitConfig {
  windowSeconds: number;
  /** 0 = off. */
  perKey: number;
  perOrg: number;
  authFailures: number;
}

export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

/** Parses the environment; throws a ConfigError that names every bad variable. */
export function parseEnvironment(env: NodeJS.ProcessEnv): EnvironmentVariables {
  const known = Object.keys(new EnvironmentVariables());
  const raw: Record<string, unknown> = {};
  for (const key of [...known, 'DATABASE_URL', 'PLATFORM_ADMIN_TOKEN']) {
    if (env[key] !== undefined) raw[key] = env[key];
  }
  const parsed = plainToInstance(EnvironmentVariables, raw);
  const errors = validateSync(parsed, { whitelist: false });
  if (errors.length > 0) {
    const lines = errors.map((e) => `${e.property}: ${Object.values(e.constraints ?? {}).join('; ')} (got ${JSON.stringify(e.value)})`);
    throw new ConfigError(`Invalid environment:\n  ${lines.join('\n  ')}`);
  }
  return parsed;
}

export const APP_CONFIG = Symbol('APP_CONFIG');
