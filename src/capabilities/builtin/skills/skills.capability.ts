import { Injectable } from '@nestjs/common';
import { Capability } from '../../capability.decorator';
import type { BuildContext, CapabilityContribution, CapabilityProvider, ResolvedSkill } from '../../capability.types';
import { LoadSkillInput, SKILLS_TOOLS, SkillsTools } from './skills.tools';

@Capability({
  id: 'skills',
  name: 'Skills',
  category: 'knowledge',
  description:
    "Gives the agent the skills you bind to it: named instructions for particular tasks. The agent sees each skill's name and when it applies, and loads the full instructions only when a task needs them.",
  tools: SKILLS_TOOLS,
  tags: ['skills', 'instructions'],
  promptGuidance:
    "Lists each bound skill by name with when it applies, and tells the agent to load a skill's instructions with load_skill before a task that matches it.",
})
@Injectable()
export class SkillsCapability implements CapabilityProvider {
  constructor(private readonly tools: SkillsTools) {}

  /** `null` without a bound skill: there would be nothing to list or load. */
  build(ctx: BuildContext): CapabilityContribution | null {
    const skills = ctx.resources.skills;
    if (skills.length === 0) return null;
    return {
      prompt: () => skillsPrompt(skills),
      tools: [
        { id: 'list_skills', execute: (_args: unknown, tool) => this.tools.list(tool, skills) },
        { id: 'load_skill', execute: (args: LoadSkillInput, tool) => this.tools.load(tool, skills, args) },
      ],
    };
  }
}

/**
 * Names and descriptions only: the instructions stay out of the prompt until a task needs them,
 * so an agent with many skills does not pay for all of them on every turn.
 */
function skillsPrompt(skills: readonly ResolvedSkill[]): string {
  return [
    'You have these skills. Before a task that matches one, load its instructions with `load_skill` and follow them:',
    ...skills.map((s) => `- **${s.name}**: ${s.description.replace(/\s+/g, ' ').trim()}`),
  ].join('\n');
}
