import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { ArrayMaxSize, IsArray, IsIn, IsOptional, IsString, IsUUID, Matches, MaxLength, MinLength, ValidateIf, ValidateNested } from 'class-validator';
import { PageQuery } from '../common/pagination';
import { IsVersionRef } from '../tool-calls/tool-calls.dto';
import type { ChatMessage } from './conversation';
import type { RunStatus } from './runs.repository';

export const RUN_STATUSES: readonly RunStatus[] = ['running', 'waiting_for_approval', 'succeeded', 'failed', 'cancelled'];
export const MAX_RUN_INPUT_CHARS = 100_000;
const MAX_PRIOR_MESSAGES = 200;

export const MODEL_PROVIDER_KINDS = ['openai-compatible'] as const;

const MAX_API_KEY_CHARS = 4096;
// Sent as a header: a space or a control character would change what is sent, or inject a header.
const API_KEY_PATTERN = /^[\x21-\x7e]+$/;
const API_KEY_PATTERN_MESSAGE = 'apiKey must be printable ASCII without spaces';

export class CreateModelProviderDto {
  @ApiProperty({ example: 'openai', description: 'Unique in the organization; the org slug pattern.', pattern: '^[a-z0-9][a-z0-9-]{1,62}$' })
  @IsString()
  @Matches(/^[a-z0-9][a-z0-9-]{1,62}$/, { message: 'name must match ^[a-z0-9][a-z0-9-]{1,62}$' })
  name: string;

  @ApiProperty({ enum: MODEL_PROVIDER_KINDS, description: 'Chat Completions with tools: OpenAI, Azure OpenAI (v1 API), vLLM, Ollama, LM Studio and the like.' })
  @IsIn(MODEL_PROVIDER_KINDS)
  kind: (typeof MODEL_PROVIDER_KINDS)[number];

  @ApiProperty({
    example: 'https://api.openai.com/v1',
    description:
      'The API base the client appends `/chat/completions` to: no query string or fragment (`400` at `baseUrl`; the key goes in `apiKey`). Checked against the egress policy when saved.',
    maxLength: 2000,
  })
  @IsString()
  @MaxLength(2000)
  // Judged when saved by the egress service, as every saved URL is (400 when it is no URL, 422 egress_refused).
  baseUrl: string;

  @ApiPropertyOptional({
    description: 'Sent as `Authorization: Bearer`. Stored encrypted; never shown again (`hasApiKey` says whether there is one).',
    maxLength: MAX_API_KEY_CHARS,
    writeOnly: true,
  })
  @IsOptional()
  @IsString()
  @MinLength(1)
  @MaxLength(MAX_API_KEY_CHARS)
  @Matches(API_KEY_PATTERN, { message: API_KEY_PATTERN_MESSAGE })
  apiKey?: string;
}

export class SetModelProviderApiKeyDto {
  @ApiProperty({
    type: String,
    nullable: true,
    description:
      'The new key, replacing the stored one (the same rules as at create); `null` removes it. Stored encrypted; never shown again. The next model request of every run on the provider sends it.',
    maxLength: MAX_API_KEY_CHARS,
    writeOnly: true,
  })
  // Required, but null is a value: removing the key of a local server (Ollama) is a change like any other.
  @ValidateIf((o: SetModelProviderApiKeyDto) => o.apiKey !== null)
  @IsString()
  @MinLength(1)
  @MaxLength(MAX_API_KEY_CHARS)
  @Matches(API_KEY_PATTERN, { message: API_KEY_PATTERN_MESSAGE })
  apiKey: string | null;
}

export class ModelProviderView {
  @ApiProperty({ format: 'uuid' }) id: string;
  @ApiProperty() name: string;
  @ApiProperty({ enum: MODEL_PROVIDER_KINDS }) kind: 'openai-compatible';
  @ApiProperty() baseUrl: string;
  @ApiProperty() hasApiKey: boolean;
  @ApiProperty({ format: 'date-time' }) createdAt: string;
}

export class ModelProviderPage {
  @ApiProperty({ type: [ModelProviderView] }) items: ModelProviderView[];
  @ApiProperty({ type: String, nullable: true }) nextCursor: string | null;
}

export class PriorMessageDto {
  @ApiProperty({ enum: ['user', 'assistant'] })
  @IsIn(['user', 'assistant'])
  role: 'user' | 'assistant';

  @ApiProperty({ maxLength: MAX_RUN_INPUT_CHARS })
  @IsString()
  @MaxLength(MAX_RUN_INPUT_CHARS)
  content: string;
}

export class CreateRunDto {
  @ApiProperty({ description: 'What the user asks; the last user message of the conversation.', maxLength: MAX_RUN_INPUT_CHARS })
  @IsString()
  @MinLength(1)
  @MaxLength(MAX_RUN_INPUT_CHARS)
  input: string;

  @ApiPropertyOptional({
    oneOf: [
      { type: 'integer', minimum: 1 },
      { type: 'string', enum: ['latest'] },
    ],
    description: 'Default: the latest published version; the run keeps the version it started with.',
  })
  @IsOptional()
  @IsVersionRef()
  version?: number | 'latest';

  @ApiPropertyOptional({ type: [PriorMessageDto], description: "The conversation before `input` (a chat's earlier turns), oldest first." })
  @IsOptional()
  @IsArray()
  @ArrayMaxSize(MAX_PRIOR_MESSAGES)
  @ValidateNested({ each: true })
  @Type(() => PriorMessageDto)
  messages?: PriorMessageDto[];

  @ApiPropertyOptional({
    description: "The worker's profile: only capabilities that apply to it contribute (empty `profiles` applies to all).",
    maxLength: 200,
  })
  @IsOptional()
  @IsString()
  @MinLength(1)
  @MaxLength(200)
  profile?: string;

  @ApiPropertyOptional({ description: 'The worker type: only capabilities that apply to it contribute (empty `workerTypes` applies to all).', maxLength: 200 })
  @IsOptional()
  @IsString()
  @MinLength(1)
  @MaxLength(200)
  workerType?: string;
}

export class ListRunsQuery extends PageQuery {
  @ApiPropertyOptional({ format: 'uuid' })
  @IsOptional()
  @IsUUID()
  agentId?: string;

  @ApiPropertyOptional({ enum: RUN_STATUSES })
  @IsOptional()
  @IsIn(RUN_STATUSES)
  status?: RunStatus;
}

export class ChatMessageView {
  @ApiProperty({ enum: ['user', 'assistant', 'tool'] }) role: string;
  @ApiProperty({ type: String, nullable: true }) content: string | null;
  @ApiPropertyOptional({
    description: 'assistant: the tool calls it asked for, `arguments` as the model wrote them.',
    type: 'array',
    items: { type: 'object', properties: { id: { type: 'string' }, name: { type: 'string' }, arguments: { type: 'string' } } },
  })
  toolCalls?: { id: string; name: string; arguments: string }[];
  @ApiPropertyOptional({ description: "tool: the model's id of the call this answers." }) toolCallId?: string;
  @ApiPropertyOptional({ description: "tool: the tool's offered name." }) name?: string;
}

export class RunUsageView {
  @ApiProperty() modelCalls: number;
  @ApiProperty() inputTokens: number;
  @ApiProperty() outputTokens: number;
  @ApiProperty() toolCalls: number;
}

export class RunErrorView {
  @ApiProperty({
    description:
      '`model_error`, `max_steps`, `too_many_refused_calls` (RUN_MAX_REFUSED_CALLS), `transcript_too_large`, `model_not_configured`, `egress_refused`, `unauthorized` (the key that started it was revoked), or a refusal of the version (`not_found`, `scope_not_granted`...).',
  })
  code: string;
  @ApiProperty() message: string;
}

export class RunView {
  @ApiProperty({ format: 'uuid' }) id: string;
  @ApiProperty({ format: 'uuid' }) agentId: string;
  @ApiProperty() version: number;
  @ApiProperty({ enum: RUN_STATUSES }) status: RunStatus;
  @ApiProperty() input: string;
  @ApiProperty({
    type: [ChatMessageView],
    description: "The conversation: prior messages, the input, and every model answer and tool result (the system prompt is the version's manifest).",
  })
  messages: ChatMessage[];
  @ApiPropertyOptional({ description: "The model's final answer, once succeeded." }) output?: string;
  @ApiProperty({
    type: [String],
    format: 'uuid',
    description:
      'Every tool call the run made (`usage.toolCalls` counts them), also one still running when the run was cancelled or its key revoked: added once it settles.',
  })
  toolCallIds: string[];
  @ApiProperty({ type: [String], format: 'uuid', description: 'While `waiting_for_approval`: what it waits for.' }) pendingApprovalIds: string[];
  @ApiProperty({ type: RunUsageView }) usage: RunUsageView;
  @ApiPropertyOptional({ type: RunErrorView }) error?: RunErrorView;
  @ApiPropertyOptional() profile?: string;
  @ApiPropertyOptional() workerType?: string;
  @ApiProperty({ format: 'date-time' }) createdAt: string;
  @ApiPropertyOptional({ format: 'date-time' }) completedAt?: string;
}

export class RunPage {
  @ApiProperty({ type: [RunView] }) items: RunView[];
  @ApiProperty({ type: String, nullable: true }) nextCursor: string | null;
}
