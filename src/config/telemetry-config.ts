import { Transform } from 'class-transformer';
import { IsIn, IsInt, IsOptional, IsString, Matches, Max, MaxLength, Min, MinLength } from 'class-validator';
import { emptyToUndefined, toInt } from './env-transforms';
import { ToolCallVariables } from './tool-calls-config';

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/** What the node logs, and who may read its metrics. */
export class TelemetryVariables extends ToolCallVariables {
  @IsOptional()
  @IsIn(LOG_LEVELS)
  LOG_LEVEL: LogLevel = 'info';

  /** Set: GET /metrics answers only `Authorization: Bearer <METRICS_TOKEN>`. */
  @IsOptional()
  @Transform(emptyToUndefined)
  @IsString()
  @MinLength(16, { message: 'must be at least 16 characters' })
  @MaxLength(512)
  @Matches(/^\S+$/, { message: 'must not contain spaces' })
  METRICS_TOKEN?: string;

  /**
   * How long one serialization of the metrics answers the scrapes that follow (ms; 0: each scrape
   * serializes, one at a time). The route may be open, and a scrape of a registry tenants have grown
   * costs the event loop milliseconds.
   */
  @IsOptional()
  @Transform(toInt)
  @IsInt()
  @Min(0)
  @Max(60_000)
  METRICS_REUSE_MS: number = 1000;
}
