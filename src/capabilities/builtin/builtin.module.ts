import { Module } from '@nestjs/common';
import { BudgetCapabilityModule } from './budget/budget.module';
import { ClockCapabilityModule } from './clock/clock.module';
import { CompactionCapabilityModule } from './compaction/compaction.module';
import { KnowledgeCapabilityModule } from './knowledge/knowledge.module';
import { MemoryCapabilityModule } from './memory/memory.module';
import { MemoryWriteCapabilityModule } from './memory-write/memory-write.module';
import { SkillsCapabilityModule } from './skills/skills.module';
import { ThinkingCapabilityModule } from './thinking/thinking.module';

/**
 * Registration is an import: a capability exists for the registry only when its module is listed
 * here. The layout test fails on a folder under builtin/ that is missing from this list.
 */
@Module({
  imports: [
    BudgetCapabilityModule,
    ClockCapabilityModule,
    CompactionCapabilityModule,
    KnowledgeCapabilityModule,
    MemoryCapabilityModule,
    MemoryWriteCapabilityModule,
    SkillsCapabilityModule,
    ThinkingCapabilityModule,
  ],
})
export class BuiltinCapabilitiesModule {}
