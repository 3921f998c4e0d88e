import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsBoolean, IsOptional, IsString, MaxLength, MinLength } from 'class-validator';

export class SetToolDisabledDto {
  @ApiProperty({
    description: '`true` refuses every call of the tool, in every agent and version of the organization, with `403 tool_disabled`; `false` allows them again.',
  })
  @IsBoolean()
  disabled: boolean;

  @ApiPropertyOptional({ maxLength: 500, description: 'Why (an incident number, say); shown in the refusal and the audit event.' })
  @IsOptional()
  @IsString()
  @MinLength(1)
  @MaxLength(500)
  reason?: string;
}

export class ToolSwitchView {
  @ApiProperty() capabilityId: string;
  @ApiProperty({ description: 'For an MCP tool, `<connection>/<tool>`.' }) toolId: string;
  @ApiProperty() disabled: boolean;
  @ApiProperty({ nullable: true, type: String }) reason: string | null;
  @ApiProperty({ nullable: true, type: String, format: 'date-time' }) disabledAt: string | null;
  @ApiProperty({ nullable: true, type: String, description: 'The key (or principal) that disabled it.' }) disabledBy: string | null;
  @ApiProperty({
    description:
      "Whether the tool exists now: always `true` for a capability's tool; for an MCP tool, whether the organization's connection of that name lists a tool of exactly that name (a switch on a name nothing lists stops nothing, a look-alike of a listed tool's name included).",
  })
  listed: boolean;
}

export class ToolSwitchPage {
  @ApiProperty({ type: [ToolSwitchView] }) items: ToolSwitchView[];
  @ApiProperty({ nullable: true, type: String }) nextCursor: string | null;
}
