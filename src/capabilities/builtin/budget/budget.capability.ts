import { Injectable } from '@nestjs/common';
import { Capability } from '../../capability.decorator';
import type { BuildContext, CapabilityContribution, CapabilityProvider } from '../../capability.types';
import { count } from '../../kit/tool-output';
import { BudgetConfig } from './budget.config';

@Capability({
  id: 'budget',
  name: 'Tool-call budget',
  category: 'governance',
  description:
    'Caps how many tool calls one run of the agent may make. The platform refuses the calls past the cap, whatever the model or the runtime does, so a looping agent stops.',
  tools: [],
  configSchema: BudgetConfig,
  tags: ['limits', 'cost', 'safety'],
  promptGuidance: 'Tells the agent how many tool calls it may make in one run, so it spends them on what matters most.',
})
@Injectable()
export class BudgetCapability implements CapabilityProvider<BudgetConfig> {
  build(ctx: BuildContext<BudgetConfig>): CapabilityContribution {
    const max = ctx.config.maxToolCallsPerRun;
    return {
      // Enforced by the executor per runId; the prompt only lets the model plan for it.
      limits: { maxToolCallsPerRun: max },
      prompt:
        `You may make at most ${count(max, 'tool call')} in one run; calls past that are refused. ` +
        'Make the most useful calls first, do not repeat a call whose answer you already have, and when you are near the limit, answer with what you have.',
    };
  }
}
