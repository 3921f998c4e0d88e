import { ApiError } from '../common/api-error';
import type { CollectionView, DocumentSummaryView, DocumentView } from './knowledge.dto';

/** The rows KnowledgeRepository reads, the views it answers with, and the refusals it makes. */

export interface CollectionRow {
  id: string;
  name: string;
  description: string | null;
  document_count: string | number;
  created_at: Date;
  updated_at: Date;
}

export interface DocumentRow {
  id: string;
  collection_id: string;
  title: string;
  metadata: Record<string, unknown>;
  content_length: string | number;
  content?: string;
  created_at: Date;
}

export interface KnowledgeHitRow {
  id: string;
  title: string;
  collection: string;
  snippet: string;
  rank: number;
}

export interface DocumentPageRow {
  title: string;
  collection: string;
  total_chars: string | number;
  page: string;
}

export function toCollection(r: CollectionRow): CollectionView {
  return {
    id: r.id,
    name: r.name,
    description: r.description,
    documentCount: Number(r.document_count),
    createdAt: new Date(r.created_at).toISOString(),
    updatedAt: new Date(r.updated_at).toISOString(),
  };
}

export function toDocumentSummary(r: DocumentRow): DocumentSummaryView {
  return {
    id: r.id,
    collectionId: r.collection_id,
    title: r.title,
    metadata: r.metadata,
    contentLength: Number(r.content_length),
    createdAt: new Date(r.created_at).toISOString(),
  };
}

export function toDocument(r: DocumentRow): DocumentView {
  return { ...toDocumentSummary(r), content: r.content ?? '' };
}

export function notIndexable(): ApiError {
  return new ApiError(
    'document_not_indexable',
    'The content has too many distinct words for a full-text search index (PostgreSQL keeps at most 1 MiB of words and positions per document); split it into several documents. Nothing was stored.',
    [{ path: 'content', code: 'document_not_indexable', message: 'content has too many distinct words to be indexed for search' }],
  );
}

export function uploadsWaiting(waiting: number): ApiError {
  return new ApiError(
    'rate_limited',
    `This organization has ${waiting} documents waiting to be stored on this server, the most it may; retry when they are stored.`,
    undefined,
    undefined,
    { 'Retry-After': '1' },
  );
}

export function storageFull(stored: number, adding: number, max: number): ApiError {
  return ApiError.conflict(
    `This organization's knowledge holds ${stored} bytes (documents' text, titles, metadata and for each word of their search index 64 and three times its bytes) of the ${max} it may store (KNOWLEDGE_MAX_BYTES_PER_ORG), and this document's ${adding} would pass that; delete documents first.`,
  );
}

export function tooManyCollections(max: number): ApiError {
  return ApiError.conflict(`An organization has at most ${max} knowledge collections (KNOWLEDGE_MAX_COLLECTIONS_PER_ORG); delete one first.`);
}

export function tooManyDocuments(max: number): ApiError {
  return ApiError.conflict(`An organization has at most ${max} knowledge documents (KNOWLEDGE_MAX_DOCUMENTS_PER_ORG); delete documents first.`);
}

/** The most collections' names and descriptions a node keeps (each up to 8.8 KB), and what they may weigh together (UTF-16). */
export const COLLECTION_TEXTS = 20_000;
export const COLLECTION_TEXTS_BYTES = 32 * 1024 * 1024;

export interface CollectionText {
  name: string;
  description: string | null;
}

/** A collection as `resolve` reads it: its name and description null when the node keeps them. */
export type ResolvedCollectionRow = Pick<CollectionRow, 'id' | 'document_count'> & { name: string | null; description: string | null };
