import { Transform } from 'class-transformer';
import { IsIn, IsOptional, IsString, Matches, MaxLength, MinLength } from 'class-validator';
import { emptyToUndefined } from './env-transforms';
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
}
