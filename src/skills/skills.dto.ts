import { ApiExtraModels, ApiProperty, ApiPropertyOptional, getSchemaPath } from '@nestjs/swagger';
import { IsIn, IsOptional, IsString, MaxLength, MinLength } from 'class-validator';
import { PageQuery } from '../common/pagination';

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

/** A skill in a `view=basic` list: everything but its instructions, which can be 100,000 characters. */
export class SkillBasicView {
  @ApiProperty({ format: 'uuid' }) id: string;
  @ApiProperty() name: string;
  @ApiProperty() description: string;
  @ApiProperty({ description: 'Length of the instructions in characters (`GET /skills/{id}` reads them).' }) instructionsLength: number;
  @ApiProperty({ format: 'date-time' }) createdAt: string;
}

export const SKILL_VIEWS = ['full', 'basic'] as const;

export class SkillsQuery extends PageQuery {
  @ApiPropertyOptional({
    enum: SKILL_VIEWS,
    default: 'full',
    description:
      "`basic`: each skill without its instructions, with their length (`instructionsLength`): what a picker needs, a page of 200 in a few kilobytes. `full`: each skill's instructions too.",
  })
  @IsOptional()
  @IsIn(SKILL_VIEWS)
  view?: (typeof SKILL_VIEWS)[number];
}

@ApiExtraModels(SkillView, SkillBasicView)
export class SkillPage {
  @ApiProperty({
    type: 'array',
    items: { oneOf: [{ $ref: getSchemaPath(SkillView) }, { $ref: getSchemaPath(SkillBasicView) }] },
    description: '`SkillView` items, or `SkillBasicView` items with `view=basic`.',
  })
  items: (SkillView | SkillBasicView)[];
  @ApiProperty({ nullable: true, type: String }) nextCursor: string | null;
}
