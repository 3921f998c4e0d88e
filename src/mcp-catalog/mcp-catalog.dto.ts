import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsIn, IsObject, IsString, Matches, MaxLength, MinLength, ValidateIf } from 'class-validator';
import { TOOL_RISKS, ToolRisk } from '../capabilities/capability.types';
import { MCP_TRANSPORTS } from './mcp-server-entry.types';

const CONNECTION_NAME = /^[a-z0-9][a-z0-9-]{1,62}$/;

/** Optional, but `null` is a value of the wrong type (400 naming the field), not "absent": it answered 500 for credentials. */
function OptionalNotNull(): PropertyDecorator {
  return ValidateIf((_object, value) => value !== undefined);
}

export class McpCredentialFieldView {
  @ApiProperty() name: string;
  @ApiProperty() description: string;
  @ApiProperty() required: boolean;
}

export class McpServerEntryView {
  @ApiProperty({ example: 'remote' }) id: string;
  @ApiProperty() name: string;
  @ApiProperty() category: string;
  @ApiProperty() description: string;
  @ApiProperty({ enum: MCP_TRANSPORTS }) transport: string;
  @ApiProperty({ description: 'The connection supplies the URL.' }) urlRequired: boolean;
  @ApiProperty({ type: [McpCredentialFieldView] }) credentials: McpCredentialFieldView[];
  @ApiProperty({ type: [String] }) scopes: string[];
  @ApiProperty({ description: "Whether the server's readOnlyHint/destructiveHint may lower a tool's risk below destructive." }) trustAnnotations: boolean;
  @ApiPropertyOptional({ description: 'For an organization key: the organization holds every scope the entry needs.' }) available?: boolean;
}

export class McpServerEntryList {
  @ApiProperty({ type: [McpServerEntryView] }) items: McpServerEntryView[];
  @ApiProperty({ nullable: true, type: String, description: 'Pass as `cursor` for the next page; null on the last one.' }) nextCursor: string | null;
}

export class CreateMcpConnectionDto {
  @ApiProperty({ description: 'A catalog entry id (GET /mcp-servers).', example: 'everything' })
  @IsString()
  @MinLength(1)
  @MaxLength(63)
  server: string;

  @ApiProperty({
    description: 'Unique in the organization; prefixes the keys of its tools in toolApproval and toolOverrides (`<name>/<tool>`).',
    pattern: CONNECTION_NAME.source,
    example: 'reference',
  })
  @IsString()
  @Matches(CONNECTION_NAME)
  name: string;

  @ApiPropertyOptional({
    description:
      'Only for an entry whose URL the connection supplies (`urlRequired`). Must pass the egress policy. A token in its query (`?api_key=`) or path (`/s/<token>/mcp`) is kept sealed like a credential: answers show every query value, and every path segment shaped like a token, as `[redacted]`.',
    maxLength: 2048,
  })
  @OptionalNotNull()
  @IsString()
  @MinLength(1)
  @MaxLength(2048)
  url?: string;

  @ApiPropertyOptional({
    description: "Values for the entry's credential fields, by name. Stored encrypted; never shown again.",
    type: 'object',
    additionalProperties: { type: 'string' },
  })
  @OptionalNotNull()
  @IsObject()
  credentials?: Record<string, unknown>;
}

export class SetMcpCredentialsDto {
  @ApiProperty({ description: 'The whole set of credentials, replacing the stored one.', type: 'object', additionalProperties: { type: 'string' } })
  @IsObject()
  credentials: Record<string, unknown>;
}

export class SetMcpUrlDto {
  @ApiProperty({
    description:
      'The address the connection moves to. Must pass the egress policy; a token in its query (`?api_key=`) is kept sealed like a credential. The tools are listed there, with the stored credentials (or `credentials`), before anything changes.',
    maxLength: 2048,
  })
  @IsString()
  @MinLength(1)
  @MaxLength(2048)
  url: string;

  @ApiPropertyOptional({
    description:
      'The whole set of credentials for the new address, replacing the stored one with the URL. Required (`{}` for none) when the connection holds credentials and `url` is of another origin: stored credentials are sent only to the origin they were given for.',
    type: 'object',
    additionalProperties: { type: 'string' },
    writeOnly: true,
  })
  @OptionalNotNull()
  @IsObject()
  credentials?: Record<string, unknown>;
}

export class SetMcpToolRiskDto {
  @ApiProperty({ enum: TOOL_RISKS })
  @IsIn(TOOL_RISKS)
  risk: ToolRisk;
}

export class McpToolView {
  @ApiProperty() name: string;
  @ApiPropertyOptional() title?: string;
  @ApiProperty() description: string;
  @ApiProperty({ type: 'object', additionalProperties: true }) inputSchema: Record<string, unknown>;
  @ApiPropertyOptional({ type: 'object', additionalProperties: true }) annotations?: Record<string, unknown>;
  @ApiProperty({ enum: TOOL_RISKS }) risk: ToolRisk;
  @ApiProperty({ enum: ['admin', 'annotations', 'default'] }) riskSource: string;
}

export class McpConnectionErrorView {
  @ApiProperty({ enum: ['upstream_unavailable', 'timeout', 'egress_refused', 'tool_error'] }) code: string;
  @ApiProperty() message: string;
}

export class McpConnectionView {
  @ApiProperty({ format: 'uuid' }) id: string;
  @ApiProperty({ description: 'The catalog entry id.' }) server: string;
  @ApiProperty() name: string;
  @ApiPropertyOptional({ description: 'The URL, its query values and token-shaped path segments shown as `[redacted]` (the URL itself is kept sealed).' })
  url?: string;
  @ApiProperty({ enum: ['ready', 'error'] }) status: 'ready' | 'error';
  @ApiPropertyOptional({ type: McpConnectionErrorView, description: 'Why the last sync failed (the tools are those of the last good one).' })
  error?: McpConnectionErrorView;
  @ApiProperty({ type: [String], description: 'The names of the stored credentials; their values are never shown.' }) credentialNames: string[];
  @ApiProperty({ type: [McpToolView] }) tools: McpToolView[];
  @ApiProperty({ format: 'date-time' }) syncedAt: string;
  @ApiProperty({ format: 'date-time' }) createdAt: string;
}

export class McpConnectionPage {
  @ApiProperty({ type: [McpConnectionView] }) items: McpConnectionView[];
  @ApiProperty({ nullable: true, type: String }) nextCursor: string | null;
}
