import { Injectable } from '@nestjs/common';
import { Capability } from '../../capability.decorator';
import type { BuildContext, CapabilityContribution, CapabilityProvider, ResolvedKnowledgeCollection } from '../../capability.types';
import { count } from '../../kit/tool-output';
import { KnowledgeConfig } from './knowledge.config';
import { KNOWLEDGE_TOOLS, KnowledgeTools, ReadDocumentInput, SearchKnowledgeInput } from './knowledge.tools';

@Capability({
  id: 'knowledge',
  name: 'Knowledge search',
  category: 'knowledge',
  description:
    'Lets the agent search the knowledge collections you bind to it (full-text, ranked, with highlighted snippets) and read their documents page by page, so it answers from your documents instead of from what the model happens to know.',
  tools: KNOWLEDGE_TOOLS,
  configSchema: KnowledgeConfig,
  scopes: ['knowledge:read'],
  tags: ['knowledge', 'search', 'documents'],
  promptGuidance:
    'Names the bound knowledge collections and what they hold, and tells the agent to search them before answering a question they may cover, to name the document an answer comes from, and to say so when nothing is found.',
})
@Injectable()
export class KnowledgeCapability implements CapabilityProvider<KnowledgeConfig> {
  constructor(private readonly tools: KnowledgeTools) {}

  /** `null` without a bound collection: a search tool with nothing to search only invites useless calls. */
  build(ctx: BuildContext<KnowledgeConfig>): CapabilityContribution | null {
    const collections = ctx.resources.knowledgeCollections;
    if (collections.length === 0) return null;
    return {
      prompt: () => knowledgePrompt(collections),
      tools: [
        { id: 'search_knowledge', execute: (args: SearchKnowledgeInput, tool) => this.tools.search(tool, collections, args, ctx.config.maxResults) },
        { id: 'read_document', execute: (args: ReadDocumentInput, tool) => this.tools.read(tool, collections, args) },
      ],
    };
  }
}

export function knowledgePrompt(collections: readonly ResolvedKnowledgeCollection[]): string {
  const lines = collections.map((c) => {
    const size = c.documentCount === 0 ? 'empty for now' : count(c.documentCount, 'document');
    const about = c.description?.replace(/\s+/g, ' ').trim();
    return `- **${c.name}** (${size})${about ? `: ${about}` : ''}`;
  });
  return [
    'You can search these knowledge collections with `search_knowledge` and read their documents with `read_document`:',
    ...lines,
    'Search them before answering a question they may cover, answer from what you find, and name the document the answer comes from. ' +
      'Read a document when its snippet is not enough. If searching finds nothing relevant, say so instead of guessing.',
  ].join('\n');
}
