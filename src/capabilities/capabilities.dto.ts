import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsIn, IsOptional, IsString, MaxLength } from 'class-validator';
import { PageQuery } from '../common/pagination';
import { TOOL_RISKS, ToolRisk } from './capability.types';

/** Catalog filters; each optional, combined with AND; and the page (`limit`, `cursor`) like every list. Anything else is refused. */
export class CapabilityQuery extends PageQuery {
  @ApiPropertyOptional({ description: 'Only capabilities of this category.' })
  @IsOptional()
  @IsString()
  @MaxLength(200)
  category?: string;

  @ApiPropertyOptional({ description: 'Only capabilities carrying this tag.' })
  @IsOptional()
  @IsString()
  @MaxLength(200)
  tag?: string;

  @ApiPropertyOptional({ description: 'Only capabilities that apply to this profile (an empty `profiles` applies to all).' })
  @IsOptional()
  @IsString()
  @MaxLength(200)
  profile?: string;

  @ApiPropertyOptional({ description: 'Only capabilities that apply to this worker type (an empty `workerTypes` applies to all).' })
  @IsOptional()
  @IsString()
  @MaxLength(200)
  workerType?: string;

  @ApiPropertyOptional({ enum: TOOL_RISKS, description: 'Only capabilities whose risk (the highest of their tools) is exactly this.' })
  @IsOptional()
  @IsIn(TOOL_RISKS)
  risk?: ToolRisk;
}

export class ToolDescriptorView {
  @ApiProperty() id: string;
  @ApiProperty({ description: 'What the model reads to decide when to use the tool.' }) description: string;
  @ApiProperty({ enum: TOOL_RISKS }) risk: ToolRisk;
  @ApiProperty({ description: '`risk` is not read_only, or `interruptBefore`.' }) requiresApproval: boolean;
  @ApiProperty() interruptBefore: boolean;
  @ApiProperty({ description: '0 = no limit.' }) maxOutputTokens: number;
  @ApiProperty() offloadLargeResults: boolean;
  @ApiProperty({ type: 'object', additionalProperties: true, description: 'JSON Schema (draft 2020-12) of the arguments.' }) inputSchema: Record<
    string,
    unknown
  >;
}

export class CapabilityDescriptorView {
  @ApiProperty() id: string;
  @ApiProperty() name: string;
  @ApiProperty() category: string;
  @ApiProperty() description: string;
  @ApiProperty({ type: [String] }) tags: string[];
  @ApiProperty({ type: [String], description: 'Empty: applies to every profile.' }) profiles: string[];
  @ApiProperty({ type: [String], description: 'Empty: applies to every worker type.' }) workerTypes: string[];
  @ApiProperty({ type: [String], description: 'Organization scopes the capability needs.' }) scopes: string[];
  @ApiProperty({ description: "True iff any tool's risk is not read_only." }) sideEffecting: boolean;
  @ApiProperty({ enum: TOOL_RISKS, description: 'The highest risk of its tools; read_only without tools.' }) risk: ToolRisk;
  @ApiProperty() promptGuidance: string;
  @ApiProperty({ type: [ToolDescriptorView] }) tools: ToolDescriptorView[];
  @ApiProperty({
    type: 'object',
    additionalProperties: true,
    description:
      'JSON Schema (draft 2020-12) of the config object; every optional field has a default. Forms read `x-enum-labels` beside an `enum` and `x-multiline` on Markdown strings.',
  })
  configSchema: Record<string, unknown>;
  @ApiPropertyOptional({ description: 'For an organization key: every scope the capability needs is granted. Absent for the platform admin.' })
  available?: boolean;
}

export class CapabilityListView {
  @ApiProperty({ type: [CapabilityDescriptorView] }) items: CapabilityDescriptorView[];
  @ApiProperty({ nullable: true, type: String, description: 'Pass as `cursor` for the next page; null on the last one.' }) nextCursor: string | null;
}
