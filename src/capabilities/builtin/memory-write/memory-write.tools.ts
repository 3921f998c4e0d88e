import { Injectable } from '@nestjs/common';
import { ArrayMaxSize, IsArray, IsOptional, IsString, IsUUID, Matches, MaxLength, MinLength } from 'class-validator';
import { JSONSchema } from 'class-validator-jsonschema';
import { ToolContext, ToolDeclaration, ToolError } from '../../capability.types';
import { count } from '../../kit/tool-output';
import { MemoryRepository, MemoryRow } from '../memory/memory.repository';

export const MEMORY_TAG_PATTERN = /^[a-z0-9][a-z0-9_-]{0,49}$/;

export class RememberInput {
  @IsString()
  @MinLength(1)
  @MaxLength(2000)
  @Matches(/\S/, { message: 'content must not be blank' })
  @JSONSchema({ description: 'One self-contained fact, written so that it makes sense on its own in a later conversation, e.g. "Prefers answers in French".' })
  content: string;

  @IsOptional()
  @IsArray()
  @ArrayMaxSize(10)
  @IsString({ each: true })
  @Matches(MEMORY_TAG_PATTERN, { each: true })
  @JSONSchema({
    description: 'A few lowercase words that name what the memory is about, e.g. ["language", "preferences"]. They weigh more than the content when recalling.',
  })
  tags: string[] = [];
}

export class ForgetInput {
  @IsUUID()
  @JSONSchema({ description: 'The memoryId that recall_memories or remember returned.' })
  memoryId: string;
}

export const MEMORY_WRITE_TOOLS: readonly ToolDeclaration[] = [
  {
    id: 'remember',
    description:
      'Use this when you learn something durable that will matter in later conversations (a preference, a fact about the user or their work, a decision) and that you do not remember yet. ' +
      'One fact per call; never secrets such as passwords or card numbers. A person approves each memory before it is kept.',
    risk: 'mutating',
    input: RememberInput,
    maxOutputTokens: 1000,
  },
  {
    id: 'forget',
    description:
      'Use this when something you remember is wrong or outdated, or the user asks you to forget it. Pass the memoryId from recall_memories or remember. A person approves each deletion.',
    risk: 'destructive',
    input: ForgetInput,
    maxOutputTokens: 1000,
  },
];

export interface RememberResult {
  memoryId: string;
  content: string;
  tags: string[];
  rememberedAt: string;
  /** True when the same text was remembered before: nothing new was kept. */
  alreadyRemembered: boolean;
  /** How many memories the agent keeps now, and the most it may keep. */
  memoriesKept?: number;
  maxMemories: number;
}

export interface ForgetResult {
  memoryId: string;
  forgotten: true;
  content: string;
}

@Injectable()
export class MemoryWriteTools {
  constructor(private readonly memories: MemoryRepository) {}

  async remember(ctx: ToolContext, input: RememberInput, maxMemories: number): Promise<RememberResult> {
    const outcome = await this.memories.remember(ctx, input.content.trim(), [...new Set(input.tags)], maxMemories);
    switch (outcome.kind) {
      case 'created':
        return { ...view(outcome.memory), alreadyRemembered: false, memoriesKept: outcome.count, maxMemories };
      case 'existing':
        return { ...view(outcome.memory), alreadyRemembered: true, maxMemories };
      case 'full':
        throw new ToolError(
          'memory_full',
          `You keep ${count(outcome.count, 'memory', 'memories')}, and the most you may keep is ${maxMemories}, so nothing was remembered. ` +
            'Use `forget` on a memory that is outdated or less useful (find it with `recall_memories`) before you `remember` another.',
        );
      case 'storage_full':
        throw new ToolError(
          'memory_storage_full',
          `The memories of this organization's agents weigh ${outcome.stored} bytes of the ${outcome.max} they may (MEMORY_MAX_BYTES_PER_ORG), and this one's ${outcome.adding} would pass that, so nothing was remembered. ` +
            'Use `forget` on a memory that is outdated or less useful (find it with `recall_memories`) before you `remember` another.',
        );
      case 'no_agent':
        throw new ToolError('agent_not_found', 'The agent this call was made for does not exist in this organization; nothing was remembered.');
    }
  }

  async forget(ctx: ToolContext, input: ForgetInput): Promise<ForgetResult> {
    const row = await this.memories.forget(ctx, input.memoryId);
    if (!row)
      throw new ToolError(
        'memory_not_found',
        `You keep no memory ${input.memoryId}; nothing was forgotten. Use \`recall_memories\` to find the memoryId of what you want to forget.`,
      );
    return { memoryId: row.id, forgotten: true, content: row.content };
  }
}

function view(row: MemoryRow): Omit<RememberResult, 'alreadyRemembered' | 'memoriesKept' | 'maxMemories'> {
  return { memoryId: row.id, content: row.content, tags: row.tags, rememberedAt: new Date(row.created_at).toISOString() };
}
