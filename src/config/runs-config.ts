import { Transform } from 'class-transformer';
import { IsInt, IsOptional, Max, Min } from 'class-validator';
import { emptyToUndefined, toInt } from './env-transforms';
import { EgressVariables } from './egress-config';

/** How agent runs are stepped: their length, their leases, a node's slots, their model calls. */
export class RunsVariables extends EgressVariables {
  /** Model calls one run may make; then it fails with `max_steps`. */
  @IsOptional()
  @Transform(toInt)
  @IsInt()
  @Min(1)
  @Max(10_000)
  RUN_MAX_STEPS: number = 32;

  /**
   * Calls of a run's model the guards refused (a tool the version does not offer, arguments its
   * schema refuses, a disabled tool...) before the run fails with `too_many_refused_calls`. Each
   * refusal is audited; a model answering every step with 128 calls of tools that do not exist made
   * one run write 4,096 `tool_call.denied` events by one request (attack round 22, AF-N1).
   */
  @IsOptional()
  @Transform(toInt)
  @IsInt()
  @Min(1)
  @Max(100_000)
  RUN_MAX_REFUSED_CALLS: number = 64;

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
   * least 1; at most RUN_MAX_CONCURRENT). A run holds its slot through a model request (one
   * attempt: between attempts it gives the slot back) and slow tools, so without it one
   * organization's hung provider took every slot for minutes.
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

  /**
   * Days a finished run (its transcript and events) is kept after it ended; 0: for good. Its tool
   * calls and the audit log stay: they are the record of what was done, the run is how it came about.
   */
  @IsOptional()
  @Transform(toInt)
  @IsInt()
  @Min(0)
  @Max(36_500)
  RUN_RETENTION_DAYS: number = 0;

  /**
   * `POST /agents/{id}/runs` with `Prefer: wait` answered after a wait, of one organization at once
   * on a node; past it the run is answered at once. Each wait keeps a connection of
   * HTTP_MAX_CONNECTIONS for up to 60 s: unbounded, one organization's 2,000 runs on a provider
   * that never answered kept every other client, health checks included, out (attack round 10).
   */
  @IsOptional()
  @Transform(toInt)
  @IsInt()
  @Min(0)
  @Max(100_000)
  RUN_WAITS_PER_ORG: number = 64;

  /**
   * Runs of one organization `running` at once, on every node together: stepping, waiting for a
   * slot, or for a model request's retry (not those waiting for approval). Past it a new run is
   * `429 rate_limited`. Each node's poll ranks every run waiting for a slot: one organization's
   * 100,000 queued behind a provider that never answers made each poll of every node 0.7 s (attack round 13).
   */
  @IsOptional()
  @Transform(toInt)
  @IsInt()
  @Min(1)
  @Max(1_000_000)
  RUN_MAX_RUNNING_PER_ORG: number = 1000;
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
  /** How long a finished run is kept (RUN_RETENTION_DAYS); unset or 0: for good. */
  retentionMs?: number;
  /** RUN_WAITS_PER_ORG (64 when unset): `Prefer: wait` answers of one organization a node holds at once. */
  waitsPerOrg?: number;
  /** RUN_MAX_RUNNING_PER_ORG (1,000 when unset): an organization's runs `running` at once, past which a new one is 429. */
  maxRunningPerOrg?: number;
  /** RUN_MAX_REFUSED_CALLS (64 when unset): refused calls of a run's model before it fails `too_many_refused_calls`. */
  maxRefusedCalls?: number;
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
