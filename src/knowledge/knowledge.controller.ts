import { Body, Controller, Delete, Get, HttpCode, Param, Post, Query } from '@nestjs/common';
import {
  ApiConflictResponse,
  ApiCreatedResponse,
  ApiNoContentResponse,
  ApiNotFoundResponse,
  ApiOkResponse,
  ApiOperation,
  ApiTags,
  ApiUnprocessableEntityResponse,
} from '@nestjs/swagger';
import { Access } from '../auth/access.decorator';
import { Ctx } from '../auth/ctx.decorator';
import { actingKeyOf, orgIdOf, RequestContext } from '../auth/principal';
import { ProblemResponse } from '../common/openapi';
import { PageQuery } from '../common/pagination';
import { UuidParam } from '../common/uuid-param.pipe';
import { CollectionPage, CollectionView, CreateCollectionDto, CreateDocumentDto, DocumentPage, DocumentView } from './knowledge.dto';
import { KnowledgeRepository } from './knowledge.repository';

const NOT_FOUND = ProblemResponse('No such collection or document in your organization (`not_found`).');

@ApiTags('knowledge')
@Controller('api/v1/knowledge/collections')
export class KnowledgeController {
  constructor(private readonly knowledge: KnowledgeRepository) {}

  @Post()
  @Access('builder')
  @ApiOperation({ summary: 'Create a knowledge collection' })
  @ApiCreatedResponse({ type: CollectionView })
  @ApiConflictResponse(ProblemResponse('The organization has `KNOWLEDGE_MAX_COLLECTIONS_PER_ORG` collections, the most it may (`conflict`); nothing made.'))
  createCollection(@Ctx() ctx: RequestContext, @Body() dto: CreateCollectionDto): Promise<CollectionView> {
    return this.knowledge.createCollection(orgIdOf(ctx), dto, actingKeyOf(ctx.principal));
  }

  @Get()
  @Access('viewer')
  @ApiOperation({ summary: 'List knowledge collections, newest first' })
  @ApiOkResponse({ type: CollectionPage })
  listCollections(@Ctx() ctx: RequestContext, @Query() query: PageQuery) {
    return this.knowledge.listCollections(orgIdOf(ctx), query);
  }

  @Get(':id')
  @Access('viewer')
  @ApiOperation({ summary: 'Read a knowledge collection' })
  @ApiOkResponse({ type: CollectionView })
  @ApiNotFoundResponse(NOT_FOUND)
  getCollection(@Ctx() ctx: RequestContext, @Param('id', UuidParam) id: string): Promise<CollectionView> {
    return this.knowledge.getCollection(orgIdOf(ctx), id);
  }

  @Delete(':id')
  @HttpCode(204)
  @Access('builder')
  @ApiOperation({ summary: 'Delete a knowledge collection and its documents; refused while a published version binds it' })
  @ApiNoContentResponse({ description: 'Deleted.' })
  @ApiNotFoundResponse(NOT_FOUND)
  @ApiConflictResponse(ProblemResponse('A published agent version binds the collection (`resource_in_use`; `boundBy` lists them).'))
  async deleteCollection(@Ctx() ctx: RequestContext, @Param('id', UuidParam) id: string): Promise<void> {
    await this.knowledge.deleteCollection(orgIdOf(ctx), id, actingKeyOf(ctx.principal));
  }

  @Post(':id/documents')
  @Access('builder')
  @ApiOperation({ summary: 'Add a document to a collection; its text is indexed for full-text search' })
  @ApiCreatedResponse({ type: DocumentView })
  @ApiNotFoundResponse(NOT_FOUND)
  @ApiConflictResponse(
    ProblemResponse(
      "The document would take the organization's documents past `KNOWLEDGE_MAX_BYTES_PER_ORG` bytes or `KNOWLEDGE_MAX_DOCUMENTS_PER_ORG` documents (`conflict`); nothing written.",
    ),
  )
  @ApiUnprocessableEntityResponse(
    ProblemResponse(
      'The content has too many distinct words for its search index (`document_not_indexable`): a PostgreSQL tsvector holds at most 1 MiB of words and positions. The document is refused whole, never stored half-indexed; split it.',
    ),
  )
  createDocument(@Ctx() ctx: RequestContext, @Param('id', UuidParam) id: string, @Body() dto: CreateDocumentDto): Promise<DocumentView> {
    return this.knowledge.createDocument(orgIdOf(ctx), id, dto, actingKeyOf(ctx.principal));
  }

  @Get(':id/documents')
  @Access('viewer')
  @ApiOperation({ summary: "List a collection's documents, newest first, without their content" })
  @ApiOkResponse({ type: DocumentPage })
  @ApiNotFoundResponse(NOT_FOUND)
  listDocuments(@Ctx() ctx: RequestContext, @Param('id', UuidParam) id: string, @Query() query: PageQuery) {
    return this.knowledge.listDocuments(orgIdOf(ctx), id, query);
  }

  @Get(':id/documents/:docId')
  @Access('viewer')
  @ApiOperation({ summary: 'Read a document with its content' })
  @ApiOkResponse({ type: DocumentView })
  @ApiNotFoundResponse(NOT_FOUND)
  getDocument(@Ctx() ctx: RequestContext, @Param('id', UuidParam) id: string, @Param('docId', UuidParam) docId: string): Promise<DocumentView> {
    return this.knowledge.getDocument(orgIdOf(ctx), id, docId);
  }

  @Delete(':id/documents/:docId')
  @HttpCode(204)
  @Access('builder')
  @ApiOperation({ summary: 'Delete a document' })
  @ApiNoContentResponse({ description: 'Deleted.' })
  @ApiNotFoundResponse(NOT_FOUND)
  async deleteDocument(@Ctx() ctx: RequestContext, @Param('id', UuidParam) id: string, @Param('docId', UuidParam) docId: string): Promise<void> {
    await this.knowledge.deleteDocument(orgIdOf(ctx), id, docId, actingKeyOf(ctx.principal));
  }
}
