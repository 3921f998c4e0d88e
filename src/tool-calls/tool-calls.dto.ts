import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsIn, IsObject, IsOptional, IsString, IsUUID, MaxLength, MinLength, ValidateBy } from 'class-validator';
import { OptionalNotNull } from '../common/optional-not-null';
import { PageQuery } from '../common/pagination';

export const TOOL_CALL_STATUSES = ['pending_approval', 'running', 'succeeded', 'failed', 'rejected', 'expired'] as const;
export type ToolCallStatus = (typeof TOOL_CALL_STATUSES)[number];

export const APPROVAL_STATUSES = ['pending', 'approved', 'rejected', 'expired'] as const;
export type ApprovalStatus = (typeof APPROVAL_STATUSES)[number];

import { APPROVAL_REASONS, ApprovalReason } from '../runtime/tool-policy';
export { APPROVAL_REASONS, ApprovalReason };

export const ENTRY_POINTS = ['rest', 'mcp', 'run'] as const;
export type EntryPoint = (typeof ENTRY_POINTS)[number];

/** A published version number, or `latest`. */
export function IsVersionRef(): PropertyDecorator {
  return ValidateBy({
    name: 'isVersionRef',
    validator: {
      validate: (v: unknown) => v === 'latest' || (typeof v === 'number' && Number.isInteger(v) && v >= 1 && v <= 2147483647),
      defaultMessage: () => 'version must be a positive integer or "latest"',
    },
  });
}

/** The longest tool name a version offers (the limit of the model APIs' function names). */
export const MAX_TOOL_NAME_LENGTH = 64;

export class CreateToolCallDto {
  @ApiProperty({ description: 'The name of a tool the version offers (after overrides).', example: 'search_knowledge' })
  @IsString()
  @MinLength(1)
  @MaxLength(MAX_TOOL_NAME_LENGTH)
  tool: string;

  @ApiProperty({ type: 'object', additionalProperties: true, description: "Validated against the tool's input schema." })
  @IsObject()
  arguments: Record<string, unknown>;

  @ApiPropertyOptional({
    oneOf: [
      { type: 'integer', minimum: 1 },
      { type: 'string', enum: ['latest'] },
    ],
    description: 'Default: the latest published version.',
  })
  @IsOptional()
  @IsVersionRef()
  version?: number | 'latest';

  @ApiPropertyOptional({
    description:
      "Groups the calls of one run of the caller's runtime; limits contributed by capabilities count per run (and per agent). Chosen by the caller: a call that names a platform run's id is not one of that run's calls, and cancelling the run leaves it alone.",
    maxLength: 255,
  })
  @IsOptional()
  @IsString()
  @MinLength(1)
  @MaxLength(255)
  runId?: string;
}

export class ListToolCallsQuery extends PageQuery {
  @ApiPropertyOptional({ format: 'uuid' })
  @IsOptional()
  @IsUUID()
  agentId?: string;

  @ApiPropertyOptional({ enum: TOOL_CALL_STATUSES })
  @IsOptional()
  @IsIn(TOOL_CALL_STATUSES)
  status?: ToolCallStatus;

  @ApiPropertyOptional({ maxLength: 255 })
  @IsOptional()
  @IsString()
  @MinLength(1)
  @MaxLength(255)
  runId?: string;
}

export class ListApprovalsQuery extends PageQuery {
  @ApiPropertyOptional({ enum: APPROVAL_STATUSES })
  @IsOptional()
  @IsIn(APPROVAL_STATUSES)
  status?: ApprovalStatus;

  @ApiPropertyOptional({ format: 'uuid' })
  @IsOptional()
  @IsUUID()
  agentId?: string;
}

export class ApproveDto {
  @ApiPropertyOptional({ maxLength: 2000 })
  @IsOptional()
  @IsString()
  @MaxLength(2000)
  note?: string;

  @ApiPropertyOptional({
    type: 'object',
    additionalProperties: true,
    description:
      "Run with these arguments instead of the requested ones. Validated like the model's; kept beside the originals. Arguments equal to the requested ones (canonical JSON, defaults applied) are not an edit. `null` is refused (400): leave the field out to run the requested arguments.",
  })
  // null is a malformed body (400), not arguments the tool refuses (422, audited as a denial).
  @OptionalNotNull()
  @IsObject()
  arguments?: Record<string, unknown>;
}

export class RejectDto {
  @ApiProperty({ minLength: 1, maxLength: 2000, description: "Why; shown to the agent as the call's error message." })
  @IsString()
  @MinLength(1)
  @MaxLength(2000)
  reason: string;
}

export class ToolCallErrorView {
  @ApiProperty({
    description:
      "A tool's own code, or `timeout`, `tool_error`, `interrupted`, `invalid_result`, `result_too_large`, `approval_rejected`, `approval_expired`, `secret_unreadable` (the platform cannot open the stored credentials of the tool's MCP connection; nothing was sent).",
  })
  code: string;
  @ApiProperty() message: string;
}

export class ToolCallView {
  @ApiProperty({ format: 'uuid' }) id: string;
  @ApiProperty({ format: 'uuid' }) agentId: string;
  @ApiProperty() version: number;
  @ApiProperty({ description: 'The offered name the call used.' }) tool: string;
  @ApiProperty() capabilityId: string;
  @ApiProperty() toolId: string;
  @ApiProperty({ nullable: true, type: String }) runId: string | null;
  @ApiProperty({ type: 'object', additionalProperties: true, description: 'The validated arguments (defaults applied), as requested.' })
  arguments: Record<string, unknown>;
  @ApiProperty({ description: 'SHA-256 hex of the RFC 8785 canonical JSON of `arguments`.' }) argumentsHash: string;
  @ApiProperty({ enum: TOOL_CALL_STATUSES }) status: ToolCallStatus;
  @ApiPropertyOptional({ description: "When succeeded. When cut, the first `maxOutputTokens` tokens of the result's JSON text." })
  result?: unknown;
  @ApiPropertyOptional() resultTruncated?: boolean;
  @ApiPropertyOptional({ description: 'Names the whole result kept for a cut one (`GET` it).', example: '/api/v1/tool-calls/{id}/result' })
  resultRef?: string;
  @ApiPropertyOptional({ type: ToolCallErrorView }) error?: ToolCallErrorView;
  @ApiPropertyOptional({ format: 'uuid' }) approvalId?: string;
  @ApiProperty({ description: 'True when an approver edited the arguments: `executedArguments` is what ran.' }) argumentsEdited: boolean;
  @ApiPropertyOptional({ type: 'object', additionalProperties: true }) executedArguments?: Record<string, unknown>;
  @ApiPropertyOptional() executedArgumentsHash?: string;
  @ApiProperty({ enum: ENTRY_POINTS, description: 'How the call arrived.' }) entryPoint: EntryPoint;
  @ApiProperty({ format: 'uuid', description: 'The API key that requested the call.' }) requestedBy: string;
  @ApiProperty({ format: 'date-time' }) createdAt: string;
  @ApiProperty({ format: 'date-time', nullable: true, type: String }) completedAt: string | null;
}

export class ToolCallPage {
  @ApiProperty({ type: [ToolCallView] }) items: ToolCallView[];
  @ApiProperty({ nullable: true, type: String, description: 'Pass as `cursor` for the next page; null on the last one.' }) nextCursor: string | null;
}

export class ToolCallResultView {
  @ApiProperty({ format: 'uuid' }) toolCallId: string;
  @ApiProperty({ description: 'The whole result, never cut.' }) result: unknown;
}

export class ApprovalView {
  @ApiProperty({ format: 'uuid' }) id: string;
  @ApiProperty({ format: 'uuid' }) toolCallId: string;
  @ApiProperty({ format: 'uuid' }) agentId: string;
  @ApiProperty() version: number;
  @ApiProperty() tool: string;
  @ApiProperty() capabilityId: string;
  @ApiProperty() toolId: string;
  @ApiProperty({ type: 'object', additionalProperties: true }) arguments: Record<string, unknown>;
  @ApiProperty() argumentsHash: string;
  @ApiProperty({ enum: APPROVAL_REASONS }) reason: ApprovalReason;
  @ApiProperty({ enum: APPROVAL_STATUSES }) status: ApprovalStatus;
  @ApiProperty({ format: 'uuid' }) requestedBy: string;
  @ApiPropertyOptional({ format: 'uuid' }) decidedBy?: string;
  @ApiPropertyOptional({ format: 'date-time' }) decidedAt?: string;
  @ApiPropertyOptional({ description: "The approver's note, or the rejection reason." }) note?: string;
  @ApiProperty({ format: 'date-time' }) expiresAt: string;
  @ApiProperty({ format: 'date-time' }) createdAt: string;
  @ApiPropertyOptional({ type: 'object', additionalProperties: true }) approvedArguments?: Record<string, unknown>;
  @ApiPropertyOptional() approvedArgumentsHash?: string;
}

export class ApprovalPage {
  @ApiProperty({ type: [ApprovalView] }) items: ApprovalView[];
  @ApiProperty({ nullable: true, type: String, description: 'Pass as `cursor` for the next page; null on the last one.' }) nextCursor: string | null;
}

export class ApprovalDecisionView {
  @ApiProperty({ type: ApprovalView }) approval: ApprovalView;
  @ApiProperty({ type: ToolCallView }) toolCall: ToolCallView;
}
