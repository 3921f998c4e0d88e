import { Injectable } from '@nestjs/common';
import { Capability } from '../../capability.decorator';
import type { BuildContext, CapabilityContribution, CapabilityProvider } from '../../capability.types';
import { ThinkingConfig } from './thinking.config';

@Capability({
  id: 'thinking',
  name: 'Reasoning effort',
  category: 'model',
  description:
    'Sets how much the model reasons before it answers: low for quick, cheap replies, high for careful multi-step work. The runtime passes it to models that support it.',
  tools: [],
  configSchema: ThinkingConfig,
  tags: ['model', 'reasoning'],
})
@Injectable()
export class ThinkingCapability implements CapabilityProvider<ThinkingConfig> {
  /** A model setting, not prompt text: telling a model to "think hard" in words is what this replaces. */
  build(ctx: BuildContext<ThinkingConfig>): CapabilityContribution {
    return { settings: { effort: ctx.config.effort } };
  }
}
