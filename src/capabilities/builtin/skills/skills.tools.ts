import { Injectable } from '@nestjs/common';
import { IsString, MaxLength, MinLength } from 'class-validator';
import { JSONSchema } from 'class-validator-jsonschema';
import { SkillsRepository } from '../../../skills/skills.repository';
import { ResolvedSkill, ToolContext, ToolDeclaration, ToolError } from '../../capability.types';
import { count, fitList } from '../../kit/tool-output';

export const LIST_SKILLS_MAX_TOKENS = 4000;

/** list_skills takes no arguments; `{}` is the only valid input. */
export class ListSkillsInput {}

export class LoadSkillInput {
  @IsString()
  @MinLength(1)
  @MaxLength(200)
  @JSONSchema({ description: 'The name of the skill, as listed in your instructions or by list_skills (or its id, when two skills share a name).' })
  name: string;
}

export const SKILLS_TOOLS: readonly ToolDeclaration[] = [
  {
    id: 'list_skills',
    description:
      'Use this when you are unsure whether a skill fits the task at hand: it lists every skill available to you, each with a description of when it applies. Then load the one that fits with load_skill.',
    risk: 'read_only',
    input: ListSkillsInput,
    maxOutputTokens: LIST_SKILLS_MAX_TOKENS,
  },
  {
    id: 'load_skill',
    description:
      "Use this before starting a task that matches the description of one of your skills: it returns the skill's full instructions, which you then follow. Load only the skills the current task needs.",
    risk: 'read_only',
    input: LoadSkillInput,
    // No budget: cutting instructions would leave the model following half a procedure. Skills
    // are written by the organization and bounded in size (100,000 characters) when created.
    maxOutputTokens: 0,
  },
];

export interface SkillSummary {
  id: string;
  name: string;
  description: string;
}

export interface ListSkillsResult {
  skills: SkillSummary[];
  /** Skills left out to stay within the output budget. */
  omitted?: number;
  message?: string;
}

export interface LoadSkillResult {
  id: string;
  name: string;
  description: string;
  instructions: string;
}

/**
 * The tools' implementations. They read the skills from the database, filtered on the calling
 * organization and on the skills the agent binds, so a tool never shows more than it was given.
 */
@Injectable()
export class SkillsTools {
  constructor(private readonly skills: SkillsRepository) {}

  async list(ctx: ToolContext, bound: readonly ResolvedSkill[]): Promise<ListSkillsResult> {
    const rows = await this.rows(ctx, bound);
    const skills = rows.map((r) => ({ id: r.id, name: r.name, description: r.description }));
    return fitList(skills, LIST_SKILLS_MAX_TOKENS, (kept, omitted) =>
      omitted === 0
        ? { skills: kept }
        : { skills: kept, omitted, message: `Left out to keep this list short: ${count(omitted, 'more skill')}. Their names are in your instructions.` },
    );
  }

  async load(ctx: ToolContext, bound: readonly ResolvedSkill[], input: LoadSkillInput): Promise<LoadSkillResult> {
    const rows = await this.rows(ctx, bound);
    const wanted = input.name.trim();
    const exact = rows.filter((r) => r.name === wanted || r.id === wanted);
    const matches = exact.length > 0 ? exact : rows.filter((r) => r.name.trim().toLowerCase() === wanted.toLowerCase());
    if (matches.length === 1) {
      const [s] = matches;
      // Read alone, after the match: a list of bound skills never carries their instructions.
      const instructions = await this.skills.instructionsOf(ctx.orgId, s.id);
      if (instructions !== undefined) return { id: s.id, name: s.name, description: s.description, instructions };
    }
    if (matches.length > 1) {
      const which = matches.map((s) => `${s.id} (${s.description})`).join('; ');
      throw new ToolError('ambiguous_skill', `Several of your skills are named "${wanted}". Load one by its id instead: ${which}.`);
    }
    const names = rows.map((r) => `"${r.name}"`).join(', ');
    const available =
      rows.length > 0
        ? `Your skills are: ${names}. Use one of these names exactly, or carry on without a skill.`
        : 'No skill is available to you: carry on without one.';
    throw new ToolError('skill_not_found', `You have no skill named "${wanted}". ${available}`);
  }

  /** The bound skills as they are now, in the order the agent binds them. */
  private rows(ctx: ToolContext, bound: readonly ResolvedSkill[]): Promise<ResolvedSkill[]> {
    return this.skills.resolve(
      ctx.orgId,
      bound.map((s) => s.id),
    );
  }
}
