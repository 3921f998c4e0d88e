import { IsInt, IsOptional, Max, Min } from 'class-validator';
import { JSONSchema } from 'class-validator-jsonschema';

export class MemoryConfig {
  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(20)
  @JSONSchema({ title: 'Memories per recall', description: 'The most memories one recall returns.' })
  maxResults: number = 5;
}
