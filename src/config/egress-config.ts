import { Transform } from 'class-transformer';
import { IsInt, IsOptional, IsString, Max, MaxLength, Min } from 'class-validator';
import { toInt } from './env-transforms';
import { RateLimitVariables } from './rate-limit-config';

/** What outbound connections (MCP servers, model providers, webhooks) may reach, and how long they may take. */
export class EgressVariables extends RateLimitVariables {
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
}

export interface EgressConfig {
  /** Host names (lower case), IP addresses and CIDR ranges exempt from the private-address rule. */
  allowedHosts: string[];
  connectTimeoutMs: number;
  requestTimeoutMs: number;
  /** Unset (tests): the egress service's MAX_CONNECTIONS_PER_ORIGIN. */
  maxConnectionsPerOrigin?: number;
}
