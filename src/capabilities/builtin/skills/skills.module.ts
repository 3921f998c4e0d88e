import { Module } from '@nestjs/common';
import { SkillsCapability } from './skills.capability';
import { SkillsTools } from './skills.tools';

/** Named apart from the skills resource module (src/skills), which it does not need. */
@Module({
  providers: [SkillsTools, SkillsCapability],
})
export class SkillsCapabilityModule {}
