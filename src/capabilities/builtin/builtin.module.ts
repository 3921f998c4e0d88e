import { Module } from '@nestjs/common';
import { BudgetModule } from './budget/budget.module';
import { ClockModule } from './clock/clock.module';
import { CompactionModule } from './compaction/compaction.module';
import { KnowledgeCapabilityModule } from './knowledge/knowledge.module';
import { MemoryModule } from './memory/memory.module';
import { MemoryWriteModule } from './memory-write/memory-write.module';
import { SkillsCapabilityModule } from './skills/skills.module';
import { ThinkingModule } from './thinking/thinking.module';

/**
 * Registration is an import: a capability exists for the registry only when its module is listed
 * here. The layout test fails on a folder under builtin/ that is missing from this list.
 */
@Module({
  imports: [BudgetModule, ClockModule, CompactionModule, KnowledgeCapabilityModule, MemoryModule, MemoryWriteModule, SkillsCapabilityModule, ThinkingModule],
})
export class BuiltinCapabilitiesModule {}
