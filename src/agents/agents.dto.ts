// Longer than 300 lines because it holds every nested shape of the agent spec, each a class with
// its validation and OpenAPI metadata, so the spec reads as one contract.
import { ApiProperty, ApiPropertyOptional, getSchemaPath } from '@nestjs/swagger';
import { Transform, Type } from 'class-transformer';
import {
  ArrayMaxSize,
  IsArray,
  IsInt,
  IsNumber,
  IsObject,
  Max,
  Min,
  IsOptional,
  IsString,
  IsUUID,
  MaxLength,
  MinLength,
  Matches,
  registerDecorator,
  ValidateNested,
  ValidationArguments,
  ValidationOptions,
} from 'class-validator';
import { ArrayUnique } from '../common/unique-list';
import { EntriesIn, MapMaxEntries } from '../common/bounded-transform';
import { OptionalNotNull } from '../common/optional-not-null';
import { SLUG_PATTERN } from '../orgs/orgs.dto';
import type { AgentSpec } from './built-version';

export const MAX_INSTRUCTIONS_CHARS = 100_000;
const MAX_CAPABILITIES = 100;
const MAX_RESOURCES = 200;
const MAX_TOOL_KEYS = 500;
const MAX_MCP_SERVERS = 20;
const MAX_MCP_TOOLS = 500;

/**
 * A JSON object that arrived as a plain object and was turned into a Map (see `toolOverrides`), of
 * at most MAX_TOOL_KEYS entries: the shape check refuses more, naming this limit, before anything is built.
 */
function IsDictionary(options?: ValidationOptions): PropertyDecorator {
  const limit = MapMaxEntries(MAX_TOOL_KEYS);
  const shape: PropertyDecorator = (target, propertyName) =>
    registerDecorator({
      name: 'isDictionary',
      target: target.constructor,
      propertyName: propertyName as string,
      options: {
        message: (args: ValidationArguments) =>
          args.value instanceof Map ? `${args.property} has more than ${MAX_TOOL_KEYS} entries` : `${args.property} must be an object keyed by tool id`,
        ...options,
      },
      validator: {
        validate: (value: unknown) => value instanceof Map && value.size <= MAX_TOOL_KEYS,
      },
    });
  return (target, propertyName) => {
    limit(target, propertyName);
    shape(target, propertyName);
  };
}

/**
 * `{ [toolId]: "required" }`: approval can only be made stricter, so "required" is the one value.
 * This rule checks the type and the size; each entry is checked by `@EntriesIn`, one problem per key.
 */
function IsApprovalMap(options?: ValidationOptions): PropertyDecorator {
  const entries = EntriesIn(['required'], MAX_TOOL_KEYS, (path) => `${path} must be "required" (approval can only be made stricter)`);
  const shape: PropertyDecorator = (target, propertyName) =>
    registerDecorator({
      name: 'isApprovalMap',
      target: target.constructor,
      propertyName: propertyName as string,
      options: {
        message: (args: ValidationArguments) =>
          isPlainObject(args.value) ? `${args.property} has more than ${MAX_TOOL_KEYS} entries` : `${args.property} must be an object keyed by tool id`,
        ...options,
      },
      validator: {
        validate: (value: unknown) => isPlainObject(value) && Object.keys(value).length <= MAX_TOOL_KEYS,
      },
    });
  return (target, propertyName) => {
    entries(target, propertyName);
    shape(target, propertyName);
  };
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

export class CreateAgentDto {
  @ApiProperty({ pattern: SLUG_PATTERN.source, example: 'support-bot', description: 'Unique within the organization.' })
  @IsString()
  @Matches(SLUG_PATTERN, { message: 'slug must match ^[a-z0-9][a-z0-9-]{1,62}$' })
  slug: string;

  @ApiProperty({ example: 'Support bot', maxLength: 200 })
  @IsString()
  @MinLength(1)
  @MaxLength(200)
  name: string;

  @ApiPropertyOptional({ maxLength: 2000 })
  @IsOptional()
  @IsString()
  @MaxLength(2000)
  description?: string;
}

export class CapabilityRefDto {
  @ApiProperty({ example: 'clock', description: 'A capability id from the catalog.' })
  @IsString()
  @MinLength(1)
  @MaxLength(200)
  id: string;

  @ApiPropertyOptional({
    type: 'object',
    additionalProperties: true,
    description: "The capability's config (its `configSchema` in the catalog); checked at validate and publish.",
  })
  @OptionalNotNull()
  @IsObject()
  config?: Record<string, unknown>;
}

/**
 * A UUID names the same resource in either letter case: ids are lowercased before the duplicate
 * check, or the same collection listed as `ab…` and `AB…` passed it and was bound twice.
 */
const lowercaseIds = () =>
  Transform(({ value }: { value: unknown }) => (Array.isArray(value) ? value.map((v) => (typeof v === 'string' ? v.toLowerCase() : v)) : value), {
    toClassOnly: true,
  });

export class AgentResourcesDto {
  @ApiPropertyOptional({ type: [String], format: 'uuid', description: 'Knowledge collection ids of this organization; each at most once, in any letter case.' })
  @lowercaseIds()
  @OptionalNotNull()
  @IsArray()
  @ArrayMaxSize(MAX_RESOURCES)
  @ArrayUnique()
  @IsUUID('all', { each: true })
  knowledgeCollections?: string[];

  @ApiPropertyOptional({ type: [String], format: 'uuid', description: 'Skill ids of this organization; each at most once, in any letter case.' })
  @lowercaseIds()
  @OptionalNotNull()
  @IsArray()
  @ArrayMaxSize(MAX_RESOURCES)
  @ArrayUnique()
  @IsUUID('all', { each: true })
  skills?: string[];
}

export class ToolOverrideDto {
  @ApiPropertyOptional({
    description: 'The name the model sees instead of the tool id; `^[a-zA-Z][a-zA-Z0-9_-]{0,63}$` is checked at publish.',
    maxLength: 200,
  })
  @OptionalNotNull()
  @IsString()
  @MaxLength(200)
  name?: string;

  @ApiPropertyOptional({ description: 'The description the model sees instead of the declared one.', maxLength: 10_000 })
  @OptionalNotNull()
  @IsString()
  @MinLength(1)
  @MaxLength(10_000)
  description?: string;
}

/** Bounds a client can rely on; what a given model accepts is the provider's to say. */
export const MAX_CONTEXT_WINDOW = 10_000_000;

export class ModelRefDto {
  @ApiProperty({ format: 'uuid', description: 'A model provider of this organization (`/model-providers`); checked at publish.' })
  @IsUUID('all')
  provider: string;

  @ApiProperty({ example: 'gpt-4.1-mini', maxLength: 200, description: 'The model name as the provider knows it (for Azure OpenAI, the deployment name).' })
  @IsString()
  @MinLength(1)
  @MaxLength(200)
  name: string;

  @ApiPropertyOptional({ minimum: 0, maximum: 2 })
  @OptionalNotNull()
  @IsNumber({ allowNaN: false, allowInfinity: false })
  @Min(0)
  @Max(2)
  temperature?: number;

  @ApiPropertyOptional({ minimum: 1, maximum: 1_000_000, description: 'The most tokens one answer of the model may have.' })
  @OptionalNotNull()
  @IsInt()
  @Min(1)
  @Max(1_000_000)
  maxOutputTokens?: number;

  @ApiPropertyOptional({
    minimum: 256,
    maximum: MAX_CONTEXT_WINDOW,
    description:
      'How many tokens the model reads at most; a run compacts the conversation (the `compaction` capability) before it outgrows this. Default 128000.',
  })
  @OptionalNotNull()
  @IsInt()
  @Min(256)
  @Max(MAX_CONTEXT_WINDOW)
  contextWindow?: number;
}

export class McpServerBindingDto {
  @ApiProperty({ format: 'uuid', description: 'An MCP connection of this organization (`/mcp-connections`).' })
  @IsUUID('all')
  connection: string;

  @ApiPropertyOptional({ type: [String], description: "Allow-list of the connection's tool names; absent: every tool it lists.", maxItems: MAX_MCP_TOOLS })
  @OptionalNotNull()
  @IsArray()
  @ArrayMaxSize(MAX_MCP_TOOLS)
  @ArrayUnique()
  @IsString({ each: true })
  @MinLength(1, { each: true })
  @MaxLength(128, { each: true })
  tools?: string[];
}

/**
 * The shape of an agent spec. Only the shape: a draft with an unknown capability or a config that
 * breaks its schema is still saved; `validate` and `publish` judge it against the registry.
 */
export class AgentSpecDto {
  @ApiProperty({ description: 'Markdown; the start of the system prompt.', maxLength: MAX_INSTRUCTIONS_CHARS })
  @IsString()
  @MaxLength(MAX_INSTRUCTIONS_CHARS)
  instructions: string;

  @ApiProperty({ type: [CapabilityRefDto], description: 'Each id at most once (checked at publish); order is kept.' })
  @IsArray()
  @ArrayMaxSize(MAX_CAPABILITIES)
  @ValidateNested({ each: true })
  @Type(() => CapabilityRefDto)
  capabilities: CapabilityRefDto[];

  @ApiPropertyOptional({ type: AgentResourcesDto })
  @OptionalNotNull()
  @IsObject()
  @ValidateNested()
  @Type(() => AgentResourcesDto)
  resources?: AgentResourcesDto;

  @ApiPropertyOptional({
    type: 'object',
    additionalProperties: { type: 'string', enum: ['required'] },
    maxProperties: MAX_TOOL_KEYS,
    description: 'Per tool id: `"required"` makes a tool ask for approval. Never looser than the default. At most 500 entries.',
    example: { search_documents: 'required' },
  })
  @OptionalNotNull()
  @IsApprovalMap()
  toolApproval?: Record<string, 'required'>;

  // Arrives as a JSON object; class-transformer turns it into a Map so each entry is validated as
  // a ToolOverrideDto and errors carry their key (`toolOverrides.<toolId>.name`).
  @ApiPropertyOptional({
    type: 'object',
    additionalProperties: { $ref: getSchemaPath(ToolOverrideDto) },
    maxProperties: MAX_TOOL_KEYS,
    description: 'Per tool id: the name and description the model sees. At most 500 entries.',
  })
  @OptionalNotNull()
  @IsDictionary()
  @ValidateNested({ each: true })
  @Type(() => ToolOverrideDto)
  toolOverrides?: Map<string, ToolOverrideDto>;

  @ApiPropertyOptional({
    type: ModelRefDto,
    description: 'The model that runs the agent (`POST /agents/{agentId}/runs`); without it runs are `409 model_not_configured`.',
  })
  @OptionalNotNull()
  @IsObject()
  @ValidateNested()
  @Type(() => ModelRefDto)
  model?: ModelRefDto;
  @ApiPropertyOptional({
    type: [McpServerBindingDto],
    description: 'MCP connections whose tools the agent offers; keys in toolApproval and toolOverrides are `<connection name>/<tool name>`.',
    maxItems: MAX_MCP_SERVERS,
  })
  @OptionalNotNull()
  @IsArray()
  @ArrayMaxSize(MAX_MCP_SERVERS)
  @ValidateNested({ each: true })
  @Type(() => McpServerBindingDto)
  mcpServers?: McpServerBindingDto[];
}

/** The draft as stored: exactly the fields that were sent, as plain JSON. */
export function toAgentSpec(dto: AgentSpecDto): AgentSpec {
  const spec: AgentSpec = {
    instructions: dto.instructions,
    capabilities: dto.capabilities.map((c) => (c.config === undefined ? { id: c.id } : { id: c.id, config: c.config })),
  };
  if (dto.resources) {
    spec.resources = {};
    if (dto.resources.knowledgeCollections) spec.resources.knowledgeCollections = dto.resources.knowledgeCollections.map((id) => id.toLowerCase());
    if (dto.resources.skills) spec.resources.skills = dto.resources.skills.map((id) => id.toLowerCase());
  }
  if (dto.toolApproval) spec.toolApproval = { ...dto.toolApproval };
  if (dto.toolOverrides) {
    spec.toolOverrides = {};
    for (const [key, o] of dto.toolOverrides) {
      const entry: { name?: string; description?: string } = {};
      if (o.name !== undefined) entry.name = o.name;
      if (o.description !== undefined) entry.description = o.description;
      // A data property whatever the key: assigning to `__proto__` would change the prototype instead.
      Object.defineProperty(spec.toolOverrides, key, { value: entry, enumerable: true, writable: true, configurable: true });
    }
  }
  if (dto.model) {
    spec.model = { provider: dto.model.provider.toLowerCase(), name: dto.model.name };
    if (dto.model.temperature !== undefined) spec.model.temperature = dto.model.temperature;
    if (dto.model.maxOutputTokens !== undefined) spec.model.maxOutputTokens = dto.model.maxOutputTokens;
    if (dto.model.contextWindow !== undefined) spec.model.contextWindow = dto.model.contextWindow;
  }
  if (dto.mcpServers) {
    spec.mcpServers = dto.mcpServers.map((b) =>
      b.tools === undefined ? { connection: b.connection.toLowerCase() } : { connection: b.connection.toLowerCase(), tools: [...b.tools] },
    );
  }
  return spec;
}

export class AgentSpecView {
  @ApiProperty() instructions: string;
  @ApiProperty({ type: [CapabilityRefDto] }) capabilities: CapabilityRefDto[];
  @ApiPropertyOptional({ type: AgentResourcesDto }) resources?: AgentResourcesDto;
  @ApiPropertyOptional({ type: 'object', additionalProperties: { type: 'string', enum: ['required'] } }) toolApproval?: Record<string, 'required'>;
  @ApiPropertyOptional({ type: 'object', additionalProperties: { $ref: getSchemaPath(ToolOverrideDto) } })
  toolOverrides?: Record<string, { name?: string; description?: string }>;
  @ApiPropertyOptional({ type: ModelRefDto }) model?: ModelRefDto;
  @ApiPropertyOptional({ type: [McpServerBindingDto] }) mcpServers?: McpServerBindingDto[];
}

export class AgentView {
  @ApiProperty({ format: 'uuid' }) id: string;
  @ApiProperty() slug: string;
  @ApiProperty() name: string;
  @ApiProperty({ nullable: true, type: String }) description: string | null;
  @ApiProperty({ type: AgentSpecView }) draft: AgentSpec;
  @ApiProperty({ nullable: true, type: Number, description: 'The newest published version; null before the first publish.' })
  latestVersion: number | null;
  @ApiProperty({ format: 'date-time' }) createdAt: string;
  @ApiProperty({ format: 'date-time' }) updatedAt: string;
}

export class AgentPage {
  @ApiProperty({ type: [AgentView] }) items: AgentView[];
  @ApiProperty({ nullable: true, type: String }) nextCursor: string | null;
}
