import { Transform } from 'class-transformer';
import { IsInt, IsOptional, Max, Min } from 'class-validator';
import { toInt } from './env-transforms';
import { AuthVariables } from './auth-config';

/** How long a tool call may run, wait for its approval, and trust its MCP server's tool list. */
export class ToolCallVariables extends AuthVariables {
  @IsOptional()
  @Transform(toInt)
  @IsInt()
  @Min(1)
  @Max(30 * 86400)
  APPROVAL_TTL_SECONDS: number = 86400;

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

  /**
   * MCP tool calls of one organization held open for a decision at once on a node; another is
   * answered "still pending" at once. A held call is a connection of the node's HTTP_MAX_CONNECTIONS
   * for up to MCP_APPROVAL_WAIT_SECONDS: unbounded, one organization's agent keys held 2,000 and
   * every other client, health checks included, was refused for 50 s (attack round 10).
   */
  @IsOptional()
  @Transform(toInt)
  @IsInt()
  @Min(0)
  @Max(100_000)
  MCP_HELD_CALLS_PER_ORG: number = 64;

  /**
   * Tool calls of one organization asked for over REST or MCP, or approved, in progress at once on
   * a node (each holds its request while the tool runs, up to TOOL_TIMEOUT_MS); past it `429 rate_limited`.
   */
  @IsOptional()
  @Transform(toInt)
  @IsInt()
  @Min(1)
  @Max(100_000)
  TOOL_CALLS_IN_FLIGHT_PER_ORG: number = 128;

  /**
   * Approvals of one organization waiting for a decision at once, on all nodes together; past it a
   * REST or MCP call that would wait for one is `429 rate_limited`, nothing recorded (a run's model reads the refusal).
   */
  @IsOptional()
  @Transform(toInt)
  @IsInt()
  @Min(1)
  @Max(10_000_000)
  APPROVALS_MAX_PENDING_PER_ORG: number = 10_000;

  /** An MCP connection's tool list older than this is listed again before a call uses it. */
  @IsOptional()
  @Transform(toInt)
  @IsInt()
  @Min(0)
  @Max(86400 * 30)
  MCP_TOOLS_TTL_SECONDS: number = 300;

  /**
   * Messages an MCP server may send beside one request's answer (notifications, requests of its
   * own); past it the call fails `upstream_unavailable`. A session's event stream gets as many per
   * minute, then is closed for the session.
   */
  @IsOptional()
  @Transform(toInt)
  @IsInt()
  @Min(10)
  @Max(1_000_000)
  MCP_MAX_MESSAGES_PER_REQUEST: number = 1000;
}
