import { ApiProperty } from '@nestjs/swagger';
import { IsString, MaxLength, MinLength } from 'class-validator';

export class CreateSkillDto {
  @ApiProperty({ example: 'Refund triage', maxLength: 200 })
  @IsString()
  @MinLength(1)
  @MaxLength(200)
  name: string;

  @ApiProperty({ description: 'When the skill applies; a capability may show it to the model.', maxLength: 2000 })
  @IsString()
  @MinLength(1)
  @MaxLength(2000)
  description: string;

  @ApiProperty({ description: 'Markdown: how to carry the skill out.', maxLength: 100_000 })
  @IsString()
  @MinLength(1)
  @MaxLength(100_000)
  instructions: string;
}

export class SkillView {
  @ApiProperty({ format: 'uuid' }) id: string;
  @ApiProperty() name: string;
  @ApiProperty() description: string;
  @ApiProperty() instructions: string;
  @ApiProperty({ format: 'date-time' }) createdAt: string;
}

export class SkillPage {
  @ApiProperty({ type: [SkillView] }) items: SkillView[];
  @ApiProperty({ nullable: true, type: String }) nextCursor: string | null;
}
