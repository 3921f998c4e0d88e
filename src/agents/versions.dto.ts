import { ApiProperty, ApiPropertyOptional, getSchemaPath } from '@nestjs/swagger';
import { IsIn, IsOptional, IsString, MaxLength, MinLength } from 'class-validator';
import { TOOL_RISKS, ToolRisk } from '../capabilities/capability.types';
import { PageQuery } from '../common/pagination';
import { AgentSpecView } from './agents.dto';
import type { AgentSpec, OfferedTool } from './built-version';
import type { DriftEntry } from './version-builder.service';

export class DriftView {
  @ApiProperty({ description: 'The offered tool name.' }) tool: string;
  @ApiProperty({
    enum: ['changed', 'removed', 'added'],
    description:
      '`changed`: its definition differs from the pinned digest; `removed`: the code no longer offers it; `added`: offered now but never pinned. Calls to it are refused with `409 tool_definition_changed` until the agent is published again.',
  })
  reason: DriftEntry['reason'];
  @ApiPropertyOptional({
    description:
      "Only on an `added` entry of a tool that is not offered because another tool of the version holds its name (an MCP connection that later lists a tool under a pinned name): that tool's id, `<connection>/<tool>`. The name stays with the tool it was pinned from.",
  })
  toolId?: string;
}

export class AgentVersionView {
  @ApiProperty({ format: 'uuid' }) agentId: string;
  @ApiProperty({ minimum: 1 }) version: number;
  @ApiProperty({ type: AgentSpecView, description: "The normalized spec: every capability's config with its defaults filled in." })
  spec: AgentSpec;
  @ApiProperty({ description: 'SHA-256 hex of the RFC 8785 canonical JSON of `spec`.' }) specHash: string;
  @ApiProperty({
    type: 'object',
    additionalProperties: { type: 'string' },
    description: 'Per offered tool name: the SHA-256 of its definition (name, description, input schema, risk, approval) at publish.',
  })
  toolDigests: Record<string, string>;
  @ApiProperty({ type: [DriftView] }) drift: DriftEntry[];
  @ApiProperty({ format: 'date-time' }) publishedAt: string;
  @ApiProperty({ description: 'The id of the API key that published it.' }) publishedBy: string;
  @ApiProperty({
    nullable: true,
    type: String,
    format: 'date-time',
    description: 'When it was retired (`POST .../retire`); calls to it are `409 version_retired` from then on. Null while it runs.',
  })
  retiredAt: string | null;
}

export class AgentVersionPage {
  @ApiProperty({ type: [AgentVersionView] }) items: AgentVersionView[];
  @ApiProperty({ nullable: true, type: String }) nextCursor: string | null;
}

export class SpecErrorView {
  @ApiProperty({ example: 'capabilities[0].config.units' }) path: string;
  @ApiProperty({
    enum: [
      'unknown_capability',
      'duplicate_capability',
      'invalid_config',
      'scope_not_granted',
      'unknown_tool',
      'invalid_tool_name',
      'duplicate_tool_name',
      'unknown_resource',
      'duplicate_resource',
      'tool_lists_too_large',
    ],
  })
  code: string;
  @ApiProperty() message: string;
}

export class ValidationResultView {
  @ApiProperty({ description: 'True when the draft can be published.' }) valid: boolean;
  @ApiProperty({ type: [SpecErrorView], maxItems: 50, description: 'At most 50 problems; `errorsOmitted` counts the rest.' }) errors: SpecErrorView[];
  @ApiPropertyOptional({ description: 'How many problems `errors` leaves out; present only when it does.' }) errorsOmitted?: number;
}

export class OfferedToolSourceView {
  @ApiProperty({ format: 'uuid' }) connectionId: string;
  @ApiProperty({ description: 'The MCP catalog entry id.' }) server: string;
}

export class OfferedToolView implements OfferedTool {
  @ApiProperty({ description: "The name the model calls; an override's name when one is set." }) name: string;
  @ApiProperty() description: string;
  @ApiProperty({ type: 'object', additionalProperties: true, description: 'JSON Schema of the arguments.' }) inputSchema: Record<string, unknown>;
  @ApiProperty() capabilityId: string;
  @ApiProperty() toolId: string;
  @ApiProperty({ enum: TOOL_RISKS }) risk: ToolRisk;
  @ApiProperty({ description: "risk is not read_only, interruptBefore, or the spec's toolApproval says required." }) requiresApproval: boolean;
  @ApiPropertyOptional({ type: OfferedToolSourceView, description: 'MCP catalog tools only (`capabilityId: "mcp"`): the connection that serves the tool.' })
  source?: OfferedToolSourceView;
}

export class OpenAiFunctionView {
  @ApiProperty() name: string;
  @ApiProperty() description: string;
  @ApiProperty({ type: 'object', additionalProperties: true, description: 'JSON Schema of the arguments, without `$schema`.' }) parameters: Record<
    string,
    unknown
  >;
}

/** An offered tool with `format=openai`: OpenAI's function-calling shape. */
export class OpenAiToolView {
  @ApiProperty({ enum: ['function'] }) type: 'function';
  @ApiProperty({ type: OpenAiFunctionView }) function: OpenAiFunctionView;
}

/** An offered tool with `format=anthropic`: Anthropic's tool shape. */
export class AnthropicToolView {
  @ApiProperty() name: string;
  @ApiProperty() description: string;
  @ApiProperty({ type: 'object', additionalProperties: true, description: 'JSON Schema of the arguments, without `$schema`.' }) input_schema: Record<
    string,
    unknown
  >;
}

export class OfferedToolPage {
  @ApiProperty({
    type: 'array',
    items: { oneOf: [{ $ref: getSchemaPath(OfferedToolView) }, { $ref: getSchemaPath(OpenAiToolView) }, { $ref: getSchemaPath(AnthropicToolView) }] },
    description: '`OfferedTool[]` by default; `OpenAiTool[]` with `format=openai`; `AnthropicTool[]` with `format=anthropic`.',
  })
  items: (OfferedToolView | OpenAiToolView | AnthropicToolView)[];
  @ApiProperty({
    nullable: true,
    type: String,
    description: 'Pass as `cursor` for the next page; null on the last one. The manifest holds every tool at once.',
  })
  nextCursor: string | null;
}

export class ManifestView {
  @ApiProperty({ format: 'uuid' }) agentId: string;
  @ApiProperty() version: number;
  @ApiProperty({ description: 'The instructions, then the prompt guidance of each contributing capability, in spec order.' }) systemPrompt: string;
  @ApiProperty({ type: [OfferedToolView] }) tools: OfferedTool[];
  @ApiProperty({
    type: 'object',
    additionalProperties: true,
    description: 'What capabilities contribute besides tools (settings, limits), keyed by capability id.',
  })
  settings: Record<string, unknown>;
}

export const TOOL_FORMATS = ['openai', 'anthropic'] as const;
export type ToolFormat = (typeof TOOL_FORMATS)[number];

export class ToolsQuery extends PageQuery {
  @ApiPropertyOptional({ enum: TOOL_FORMATS, description: "Render the tools in a provider's function-calling shape, to paste in unchanged." })
  @IsOptional()
  @IsIn(TOOL_FORMATS)
  format?: ToolFormat;

  @ApiPropertyOptional({
    description: 'Only the tools of capabilities that apply to this profile (a capability with empty `profiles` applies to all).',
    maxLength: 200,
  })
  @IsOptional()
  @IsString()
  @MinLength(1)
  @MaxLength(200)
  profile?: string;

  @ApiPropertyOptional({ description: 'Only the tools of capabilities that apply to this worker type (empty `workerTypes` applies to all).', maxLength: 200 })
  @IsOptional()
  @IsString()
  @MinLength(1)
  @MaxLength(200)
  workerType?: string;
}

/** A worker's view of a version (seed 1's profiles and worker types); see ToolsQuery. */
export class ManifestQuery {
  @ApiPropertyOptional({ description: 'Only the capabilities that apply to this profile contribute (empty `profiles` applies to all).', maxLength: 200 })
  @IsOptional()
  @IsString()
  @MinLength(1)
  @MaxLength(200)
  profile?: string;

  @ApiPropertyOptional({ description: 'Only the capabilities that apply to this worker type contribute (empty `workerTypes` applies to all).', maxLength: 200 })
  @IsOptional()
  @IsString()
  @MinLength(1)
  @MaxLength(200)
  workerType?: string;
}

export class VersionsQuery extends PageQuery {}
