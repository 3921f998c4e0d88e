import { IsInt, IsOptional, Max, Min } from 'class-validator';
import { JSONSchema } from 'class-validator-jsonschema';

export class MemoryWriteConfig {
  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(100000)
  @JSONSchema({
    title: 'Most memories kept',
    description: 'Past this many memories, `remember` is refused until the agent forgets one. Keeps an agent from filling its memory with noise.',
  })
  maxMemories: number = 1000;
}
