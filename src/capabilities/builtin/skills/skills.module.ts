import { Module } from '@nestjs/common';
import { SkillsModule } from '../../../skills/skills.module';
import { SkillsCapability } from './skills.capability';
import { SkillsTools } from './skills.tools';

/** Named apart from the skills resource module (src/skills), whose repository its tools read. */
@Module({
  imports: [SkillsModule],
  providers: [SkillsTools, SkillsCapability],
})
export class SkillsCapabilityModule {}
