import { IsIn, IsOptional } from 'class-validator';
import { JSONSchema } from 'class-validator-jsonschema';
import { EnumLabels } from '../../form-hints.decorator';

export const THINKING_EFFORTS = ['low', 'medium', 'high'] as const;
export type ThinkingEffort = (typeof THINKING_EFFORTS)[number];

export class ThinkingConfig {
  @IsOptional()
  @IsIn(THINKING_EFFORTS)
  // Above @JSONSchema: it adds to the schema that one sets.
  @EnumLabels({
    low: 'Answers quickly after little deliberation: lookups, short replies, routine tool use. Cheapest and fastest.',
    medium: 'Thinks before answering when the question calls for it. The right choice for most agents.',
    high: 'Deliberates at length before answering: multi-step reasoning, planning, tricky analysis. Slower, and costs the most tokens.',
  })
  @JSONSchema({ title: 'Reasoning effort', description: 'How much the model reasons before it answers, for models that support it.' })
  effort: ThinkingEffort = 'medium';
}
