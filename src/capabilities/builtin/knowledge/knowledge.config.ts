import { IsInt, IsOptional, Max, Min } from 'class-validator';
import { JSONSchema } from 'class-validator-jsonschema';

export class KnowledgeConfig {
  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(20)
  @JSONSchema({
    title: 'Results per search',
    description: 'The most documents one search returns. More gives the model more to read and costs more tokens per search.',
  })
  maxResults: number = 5;
}
