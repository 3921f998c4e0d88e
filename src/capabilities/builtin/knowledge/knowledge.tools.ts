import { Injectable } from '@nestjs/common';
import { IsInt, IsOptional, IsString, IsUUID, Max, MaxLength, Min, MinLength } from 'class-validator';
import { JSONSchema } from 'class-validator-jsonschema';
import { MAX_DOCUMENT_CHARS } from '../../../knowledge/knowledge.limits';
import { KnowledgeHitRow, KnowledgeRepository } from '../../../knowledge/knowledge.repository';
import { ResolvedKnowledgeCollection, ToolContext, ToolDeclaration, ToolError } from '../../capability.types';
import { anyWordQuery, boundedNegations } from '../../kit/full-text-query';
import { count, fitList, longestFittingText } from '../../kit/tool-output';

export const SEARCH_KNOWLEDGE_MAX_TOKENS = 3000;
export const READ_DOCUMENT_MAX_TOKENS = 4000;

export class SearchKnowledgeInput {
  @IsString()
  @MinLength(1)
  @MaxLength(500)
  @JSONSchema({
    description:
      'The key words a matching document would contain. "Quoted words" match a phrase, `or` between words gives alternatives, `-word` excludes a word.',
  })
  query: string;

  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(20)
  @JSONSchema({ description: "How many documents to return at most. The agent's configuration may cap it lower." })
  limit?: number;
}

export class ReadDocumentInput {
  @IsUUID()
  @JSONSchema({ description: 'The documentId that search_knowledge returned.' })
  documentId: string;

  @IsOptional()
  @IsInt()
  @Min(0)
  @Max(MAX_DOCUMENT_CHARS)
  @JSONSchema({ description: 'Where to start reading, in characters from the start of the document: 0, or the nextOffset of the previous page.' })
  offset: number = 0;

  @IsOptional()
  @IsInt()
  @Min(500)
  @Max(12000)
  @JSONSchema({ description: "The most characters to return in this page. A page may be shorter, to stay within the tool's output budget." })
  maxChars: number = 6000;
}

export const KNOWLEDGE_TOOLS: readonly ToolDeclaration[] = [
  {
    id: 'search_knowledge',
    description:
      'Use this before answering any question the knowledge collections listed in your instructions may cover, instead of answering from general knowledge. ' +
      'Query with the key words a matching document would contain. Returns the best-matching documents, best first, each with a highlighted snippet and a documentId to read it in full with read_document.',
    risk: 'read_only',
    input: SearchKnowledgeInput,
    maxOutputTokens: SEARCH_KNOWLEDGE_MAX_TOKENS,
  },
  {
    id: 'read_document',
    description:
      'Use this when a snippet from search_knowledge is not enough to answer: it returns the text of the document one page at a time. ' +
      'Pass the documentId from search_knowledge; when nextOffset is not null and you need more, call it again with offset set to nextOffset.',
    risk: 'read_only',
    input: ReadDocumentInput,
    maxOutputTokens: READ_DOCUMENT_MAX_TOKENS,
  },
];

export interface KnowledgeHit {
  documentId: string;
  title: string;
  collection: string;
  /** Matched words between `**`; passages joined by ` … `. */
  snippet: string;
  score: number;
}

export interface SearchKnowledgeResult {
  query: string;
  results: KnowledgeHit[];
  /** Matching documents left out to stay within the output budget. */
  omitted?: number;
  /** Said when there is nothing, or less than was found, to show. */
  message?: string;
}

export interface ReadDocumentResult {
  documentId: string;
  title: string;
  collection: string;
  offset: number;
  content: string;
  totalChars: number;
  /** Where the next page starts; null at the end of the document. */
  nextOffset: number | null;
}

/**
 * The tools' implementations. Every query is bounded by the calling organization and by the
 * collections the agent binds: a document anywhere else does not exist for the agent.
 */
@Injectable()
export class KnowledgeTools {
  constructor(private readonly knowledge: KnowledgeRepository) {}

  async search(
    ctx: ToolContext,
    collections: readonly ResolvedKnowledgeCollection[],
    input: SearchKnowledgeInput,
    maxResults: number,
  ): Promise<SearchKnowledgeResult> {
    const limit = Math.min(input.limit ?? maxResults, maxResults);
    const find = (query: string): Promise<KnowledgeHitRow[]> =>
      this.knowledge.searchDocuments(
        ctx.orgId,
        collections.map((c) => c.id),
        query,
        limit,
        ctx.signal,
      );
    const query = boundedNegations(input.query);
    let rows = await find(query);
    const notes: string[] = [];
    const anyWord = rows.length === 0 ? anyWordQuery(query) : null;
    if (anyWord !== null) {
      rows = await find(anyWord);
      if (rows.length > 0) notes.push(`No document contains all the words of the query; these contain some of them, best first.`);
    }
    if (rows.length === 0) return { query: input.query, results: [], message: await this.nothingFound(query, input.query, collections) };
    const hits = rows.map((r) => ({
      documentId: r.id,
      title: r.title,
      collection: r.collection,
      snippet: r.snippet,
      score: Math.round(Number(r.rank) * 10000) / 10000,
    }));
    return fitList(hits, SEARCH_KNOWLEDGE_MAX_TOKENS, (kept, omitted) => {
      const said =
        omitted === 0
          ? notes
          : [...notes, `Left out to keep this result short: ${count(omitted, 'more matching document')}. Search with more specific words to see them.`];
      return { query: input.query, results: kept, ...(omitted > 0 ? { omitted } : {}), ...(said.length > 0 ? { message: said.join(' ') } : {}) };
    });
  }

  async read(ctx: ToolContext, collections: readonly ResolvedKnowledgeCollection[], input: ReadDocumentInput): Promise<ReadDocumentResult> {
    const row = await this.knowledge.readDocumentPage(
      ctx.orgId,
      collections.map((c) => c.id),
      input.documentId,
      input.offset,
      input.maxChars,
    );
    if (!row) {
      throw new ToolError(
        'document_not_found',
        `No document ${input.documentId} is in the knowledge available to you. Use search_knowledge to find the documentId of what you need.`,
      );
    }
    const totalChars = Number(row.total_chars);
    if (input.offset > 0 && input.offset >= totalChars) {
      throw new ToolError(
        'offset_out_of_range',
        `The document has ${totalChars} characters, so offset ${input.offset} is past its end. Leave offset out to read it from the start.`,
      );
    }
    // Offsets count characters (code points) as Postgres does, never UTF-16 halves of one.
    const chars = Array.from(row.page);
    const page = (n: number): ReadDocumentResult => ({
      documentId: input.documentId,
      title: row.title,
      collection: row.collection,
      offset: input.offset,
      content: chars.slice(0, n).join(''),
      totalChars,
      nextOffset: input.offset + n < totalChars ? input.offset + n : null,
    });
    // A page is made shorter rather than cut by the executor: a cut page loses its nextOffset.
    return page(longestFittingText(chars, page, READ_DOCUMENT_MAX_TOKENS));
  }

  private async nothingFound(query: string, asked: string, collections: readonly ResolvedKnowledgeCollection[]): Promise<string> {
    if ((await this.knowledge.searchableWords(query)) === 0) {
      return 'The query has no words that can be searched for (very common words such as "the" are ignored). Search with the specific words a matching document would contain.';
    }
    const names = collections.map((c) => `"${c.name}"`).join(', ');
    return `Nothing in ${names} matches "${asked}". Try other words or a synonym. If it is still not found, say that the knowledge available to you does not cover it rather than guessing.`;
  }
}
