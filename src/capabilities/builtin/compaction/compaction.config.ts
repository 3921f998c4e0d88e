import { IsIn, IsInt, IsOptional, IsString, Max, MaxLength, Min, MinLength } from 'class-validator';
import { JSONSchema } from 'class-validator-jsonschema';
import { EnumLabels, Multiline } from '../../form-hints.decorator';

export const COMPACTION_STRATEGIES = ['clear_tool_results', 'summarize', 'truncate_oldest'] as const;
export type CompactionStrategy = (typeof COMPACTION_STRATEGIES)[number];

export const DEFAULT_SUMMARY_PROMPT = [
  'Summarize the conversation so far so that it can replace the older turns. Keep:',
  '- what the user wants, and every decision, preference and constraint they stated;',
  '- facts learned from tools that are still needed, with the identifiers (document ids, memory ids, order numbers) needed to look them up again;',
  '- what has been done, and what is still to do.',
  'Leave out greetings, repetition and tool results that no longer matter. Write it as notes, not as a dialogue.',
].join('\n');

export class CompactionConfig {
  @IsOptional()
  @IsIn(COMPACTION_STRATEGIES)
  // Above @JSONSchema: it adds to the schema that one sets.
  @EnumLabels({
    clear_tool_results:
      'Removes the results of older tool calls and keeps every message. Cheap and keeps the conversation intact; the agent calls a tool again if it needs an old result.',
    summarize:
      'Replaces older turns with a summary written by the model, using the summary prompt. Keeps the gist of long conversations; costs one extra model call each time.',
    truncate_oldest: 'Drops the oldest turns. Cheapest, but the agent forgets what was said early on.',
  })
  @JSONSchema({ title: 'Strategy', description: 'What the runtime does when the conversation grows too long for the model.' })
  strategy: CompactionStrategy = 'clear_tool_results';

  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(100)
  @JSONSchema({ title: 'Turns kept as they are', description: 'How many of the most recent turns are never compacted.' })
  keepLastTurns: number = 10;

  @IsOptional()
  @IsString()
  @MinLength(1)
  @MaxLength(10000)
  @Multiline()
  @JSONSchema({ title: 'Summary prompt', description: 'What the model is asked when it summarizes older turns. Used by the `summarize` strategy only.' })
  summaryPrompt: string = DEFAULT_SUMMARY_PROMPT;
}
