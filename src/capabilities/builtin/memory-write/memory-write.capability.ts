import { Injectable } from '@nestjs/common';
import { Capability } from '../../capability.decorator';
import type { BuildContext, CapabilityContribution, CapabilityProvider } from '../../capability.types';
import { MemoryWriteConfig } from './memory-write.config';
import { ForgetInput, MEMORY_WRITE_TOOLS, MemoryWriteTools, RememberInput } from './memory-write.tools';

@Capability({
  id: 'memory-write',
  name: 'Memory: remember and forget',
  category: 'memory',
  description:
    'Lets the agent keep new memories for later conversations and forget wrong or outdated ones. Every remember and every forget waits for a person\'s approval. Pair it with "Memory" so the agent can also recall them.',
  tools: MEMORY_WRITE_TOOLS,
  configSchema: MemoryWriteConfig,
  scopes: ['memory:write'],
  tags: ['memory', 'personalization'],
  promptGuidance:
    'You can keep memories for later conversations with `remember`, and drop wrong or outdated ones with `forget`. A person approves each of these calls before it happens: ' +
    'when one comes back pending approval, carry on without waiting for it and do not repeat it. Remember only durable facts that will help later, one per call, and never secrets.',
})
@Injectable()
export class MemoryWriteCapability implements CapabilityProvider<MemoryWriteConfig> {
  constructor(private readonly tools: MemoryWriteTools) {}

  build(ctx: BuildContext<MemoryWriteConfig>): CapabilityContribution {
    return {
      tools: [
        { id: 'remember', execute: (args: RememberInput, tool) => this.tools.remember(tool, args, ctx.config.maxMemories) },
        { id: 'forget', execute: (args: ForgetInput, tool) => this.tools.forget(tool, args) },
      ],
    };
  }
}
