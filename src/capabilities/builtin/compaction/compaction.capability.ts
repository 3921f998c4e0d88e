import { Injectable } from '@nestjs/common';
import { Capability } from '../../capability.decorator';
import type { BuildContext, CapabilityContribution, CapabilityProvider } from '../../capability.types';
import { CompactionConfig, CompactionStrategy } from './compaction.config';

/** What the agent should know about its own history under each strategy. */
const PROMPTS: Record<CompactionStrategy, (turns: number) => string> = {
  clear_tool_results: (turns) =>
    `In long conversations, the results of tool calls older than the last ${turns} turns are removed to save space. If you need such a result again, call the tool again rather than guessing what it said.`,
  summarize: (turns) =>
    `In long conversations, turns older than the last ${turns} are replaced by a summary. Rely on the summary for what happened earlier, and call tools again when you need exact details.`,
  truncate_oldest: (turns) =>
    `In long conversations, only the last ${turns} turns are kept. Restate in your replies anything from earlier that you will still need.`,
};

@Capability({
  id: 'compaction',
  name: 'History compaction',
  category: 'context',
  description:
    'Tells the runtime how to shrink a conversation that grows too long for the model: clear old tool results, summarize older turns, or drop the oldest ones, always keeping the most recent turns as they are.',
  tools: [],
  configSchema: CompactionConfig,
  tags: ['context', 'history'],
  promptGuidance: 'Tells the agent how its older turns may be compacted, so it calls a tool again instead of guessing at a result that was removed.',
})
@Injectable()
export class CompactionCapability implements CapabilityProvider<CompactionConfig> {
  build(ctx: BuildContext<CompactionConfig>): CapabilityContribution {
    const { strategy, keepLastTurns, summaryPrompt } = ctx.config;
    return {
      // The summary prompt only means something to the summarize strategy; a runtime must not have to guess.
      settings: strategy === 'summarize' ? { strategy, keepLastTurns, summaryPrompt } : { strategy, keepLastTurns },
      prompt: PROMPTS[strategy](keepLastTurns),
    };
  }
}
