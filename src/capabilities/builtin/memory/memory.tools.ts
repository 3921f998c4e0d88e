import { Injectable } from '@nestjs/common';
import { IsInt, IsOptional, IsString, Max, MaxLength, Min, MinLength } from 'class-validator';
import { JSONSchema } from 'class-validator-jsonschema';
import type { ToolContext, ToolDeclaration } from '../../capability.types';
import { anyWordQuery, boundedNegations } from '../../kit/full-text-query';
import { count, fitList } from '../../kit/tool-output';
import { MemoryRepository } from './memory.repository';

export const RECALL_MEMORIES_MAX_TOKENS = 3000;

export class RecallMemoriesInput {
  @IsString()
  @MinLength(1)
  @MaxLength(500)
  @JSONSchema({ description: 'The key words of what you are trying to remember, e.g. "preferred language" or "invoice address".' })
  query: string;

  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(20)
  @JSONSchema({ description: "How many memories to return at most. The agent's configuration may cap it lower." })
  limit?: number;
}

export const MEMORY_TOOLS: readonly ToolDeclaration[] = [
  {
    id: 'recall_memories',
    description:
      'Use this before asking the user for something they may have told you in an earlier conversation (a preference, a fact about them or their work, a decision), ' +
      'and when the conversation turns to something you may have learned before. Returns what you remembered that matches the query, best match first, each with its memoryId.',
    risk: 'read_only',
    input: RecallMemoriesInput,
    maxOutputTokens: RECALL_MEMORIES_MAX_TOKENS,
  },
];

export interface RecalledMemory {
  memoryId: string;
  content: string;
  tags: string[];
  rememberedAt: string;
}

export interface RecallMemoriesResult {
  query: string;
  memories: RecalledMemory[];
  /** Matching memories left out to stay within the output budget. */
  omitted?: number;
  message?: string;
}

@Injectable()
export class MemoryTools {
  constructor(private readonly memories: MemoryRepository) {}

  async recall(ctx: ToolContext, input: RecallMemoriesInput, maxResults: number): Promise<RecallMemoriesResult> {
    const limit = Math.min(input.limit ?? maxResults, maxResults);
    const query = boundedNegations(input.query);
    let rows = await this.memories.search(ctx, query, limit);
    const notes: string[] = [];
    const anyWord = rows.length === 0 ? anyWordQuery(query) : null;
    if (anyWord !== null) {
      rows = await this.memories.search(ctx, anyWord, limit);
      if (rows.length > 0) notes.push('No memory contains all the words of the query; these contain some of them, best first.');
    }
    if (rows.length === 0) return { query: input.query, memories: [], message: await this.nothingFound(ctx, query, input.query) };
    const memories = rows.map((r) => ({ memoryId: r.id, content: r.content, tags: r.tags, rememberedAt: new Date(r.created_at).toISOString() }));
    return fitList(memories, RECALL_MEMORIES_MAX_TOKENS, (kept, omitted) => {
      const said =
        omitted === 0
          ? notes
          : [
              ...notes,
              `Left out to keep this result short: ${count(omitted, 'more matching memory', 'more matching memories')}. Recall with more specific words to see them.`,
            ];
      return { query: input.query, memories: kept, ...(omitted > 0 ? { omitted } : {}), ...(said.length > 0 ? { message: said.join(' ') } : {}) };
    });
  }

  private async nothingFound(ctx: ToolContext, query: string, asked: string): Promise<string> {
    if ((await this.memories.count(ctx)) === 0) return 'You have no memories yet: nothing was remembered in earlier conversations.';
    if (!(await this.memories.hasSearchableWords(query))) {
      return 'The query has no words that can be searched for (very common words such as "the" are ignored). Recall with the specific words of what you are looking for.';
    }
    return `No memory matches "${asked}". Try other words or a synonym; if nothing matches, you have not been told this before.`;
  }
}
