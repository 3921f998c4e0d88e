// Longer than 300 lines because it holds both knowledge tables' SQL (collections and their documents), whose bounds are counted together.
import { Inject, Injectable } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { DataSource, EntityManager } from 'typeorm';
import { ApiError } from '../common/api-error';
import { OrgGate } from '../common/org-gate';
import { LruCache } from '../common/lru-cache';
import { APP_CONFIG, AppConfig } from '../config/app-config';
import { DEFAULT_STORAGE_LIMITS } from '../config/database-config';
import { isProgramLimitExceeded } from '../common/db-errors';
import { deleteUnlessBound } from '../database/delete-unless-bound';
import { countingTransaction, countUnderOrgLock, holdActingKey } from '../database/org-limit';
import { Page, PageQuery } from '../common/pagination';
import { newestFirstPage } from '../database/keyset-page';
import { PROXIMITY_CANDIDATES, proximityRank, searchTerms, searchTurns } from '../database/text-search';
import type { ResolvedKnowledgeCollection } from '../capabilities/capability.types';
import { CollectionView, CreateCollectionDto, CreateDocumentDto, DocumentSummaryView, DocumentView } from './knowledge.dto';
import {
  COLLECTION_TEXTS,
  COLLECTION_TEXTS_BYTES,
  CollectionRow,
  CollectionText,
  ResolvedCollectionRow,
  DocumentPageRow,
  DocumentRow,
  KnowledgeHitRow,
  notIndexable,
  storageFull,
  toCollection,
  toDocument,
  toDocumentSummary,
  tooManyCollections,
  tooManyDocuments,
  uploadsWaiting,
} from './knowledge-rows';

export type { DocumentPageRow, KnowledgeHitRow } from './knowledge-rows';

/**
 * The characters of a document its snippet is taken from. ts_headline parses all the text it is
 * given and searches it for covers of its query; over a whole document (up to 1 MiB) that was 0.15
 * to 0.2 s a document at best. Past this, the snippet is the document's opening lines: the agent
 * reads on with read_document.
 */
export const SNIPPET_SOURCE_CHARS = 65_536;

/*
 * ts_headline reads the whole text it is given, so only the few top-ranked documents get one, and
 * only their first SNIPPET_SOURCE_CHARS. Its query is not the search's: it is the search's words,
 * each once, any of them (`'a' | 'b'`). The cover search over an AND of repeated items is
 * superlinear in them: one word 80 times (a 500-character query) took 24 s over 64 KiB, and ten
 * such calls of one organization held the node's pool for minutes after their tools had timed
 * out (attack round 6). Any-of-the-words marks the same words in at most a few milliseconds.
 *
 * The ranking has the same trap, bounded as src/database/text-search.ts says: every match ranked
 * by any of its words, the best PROXIMITY_CANDIDATES again as asked. Each holds all the words.
 */
const SEARCH_SQL = `
  SELECT d.id, d.title, c.name AS collection, top.rank,
         ts_headline('english'::regconfig, left(d.content, ${SNIPPET_SOURCE_CHARS}), top.marks,
           'MaxFragments=2, MinWords=8, MaxWords=30, StartSel=**, StopSel=**, FragmentDelimiter=" … "') AS snippet
    FROM (
      SELECT cand.id, cand.marks, ${proximityRank('cand.search', 'cand', 1)} AS rank
        FROM (
          SELECT d.id, d.search, q.query, q.marks, q.words
            FROM knowledge_document d, ${searchTerms('$3', 'q')}
           WHERE d.org_id = $1 AND d.collection_id = ANY($2::uuid[]) AND d.search @@ q.query
           ORDER BY ts_rank(d.search, q.marks, 1) DESC, d.id
           LIMIT ${PROXIMITY_CANDIDATES}
        ) cand
       ORDER BY rank DESC, cand.id
       LIMIT $4
    ) top
    JOIN knowledge_document d ON d.org_id = $1 AND d.id = top.id
    JOIN knowledge_collection c ON c.org_id = d.org_id AND c.id = d.collection_id
   ORDER BY top.rank DESC, d.id`;

/** Collections by id with their counts; names and descriptions only of those not among $3 (kept already). */
const RESOLVE_SQL = `
  SELECT c.id, c.document_count, CASE WHEN c.id = ANY($3::uuid[]) THEN NULL ELSE c.name END AS name,
         CASE WHEN c.id = ANY($3::uuid[]) THEN NULL ELSE c.description END AS description
    FROM knowledge_collection c WHERE c.org_id = $1 AND c.id = ANY($2::uuid[])`;

const READ_SQL = `
  SELECT d.title, c.name AS collection, d.content_chars AS total_chars, substr(d.content, $4::int + 1, $5::int) AS page
    FROM knowledge_document d
    JOIN knowledge_collection c ON c.org_id = d.org_id AND c.id = d.collection_id
   WHERE d.org_id = $1 AND d.collection_id = ANY($2::uuid[]) AND d.id = $3`;

/**
 * A collection's document count is kept on its row by the database's triggers (migration
 * 1764523220000): counted per read, a page of collections at a million documents took 100 ms and
 * ten at once held the pool (attack round 10).
 */
const COLLECTION_COLUMNS = `c.id, c.name, c.description, c.created_at, c.updated_at, c.document_count`;

/** Documents of one organization stored at once on this node (they take the organization's lock in turn), and waiting. */
const UPLOADS_PER_ORG = 1;
const UPLOADS_WAITING_PER_ORG = 16;

/**
 * The owner of `knowledge_collection` and `knowledge_document`: the REST resource, the resolution
 * of an agent's collections, and the knowledge tools' searches all go through here. Every method
 * takes the organization first.
 */
@Injectable()
export class KnowledgeRepository {
  private readonly maxBytes: number;
  private readonly maxCollections: number;
  private readonly maxDocuments: number;
  /**
   * An organization's documents go in one at a time anyway (its lock, below); waiting for that
   * lock with a connection each, one builder key's uploads held the pool (attack round 8).
   */
  private readonly uploads = new OrgGate(UPLOADS_PER_ORG, UPLOADS_WAITING_PER_ORG, (waiting) => uploadsWaiting(waiting));
  /** Collections' names and descriptions by `<org>/<id>`: they never change once made. */
  private readonly texts = new LruCache<string, CollectionText>(COLLECTION_TEXTS, {
    max: COLLECTION_TEXTS_BYTES,
    of: (t) => 64 + 2 * (t.name.length + (t.description?.length ?? 0)),
  });
  /** A search ranks every document that matches: its time grows with the organization's documents (turns shared with memory recalls). */
  private readonly searches: OrgGate;

  constructor(
    private readonly dataSource: DataSource,
    @Inject(APP_CONFIG) config: AppConfig,
  ) {
    const limits = config.storage ?? DEFAULT_STORAGE_LIMITS;
    this.maxBytes = limits.knowledgeBytesPerOrg;
    this.maxCollections = limits.knowledgeCollectionsPerOrg ?? DEFAULT_STORAGE_LIMITS.knowledgeCollectionsPerOrg!;
    this.maxDocuments = limits.knowledgeDocumentsPerOrg ?? DEFAULT_STORAGE_LIMITS.knowledgeDocumentsPerOrg!;
    this.searches = searchTurns(dataSource, config.databasePoolSize);
  }

  /** At most KNOWLEDGE_MAX_COLLECTIONS_PER_ORG (409), counted under the organization's lock so creations at once count in turn. */
  async createCollection(orgId: string, dto: CreateCollectionDto, actingKey?: string): Promise<CollectionView> {
    const id = randomUUID();
    await countingTransaction(this.dataSource, 'knowledge_collection', orgId, async (m) => {
      const count = await countUnderOrgLock(m, 'knowledge_collection', orgId);
      // Creations queue on the count's lock: a key revoked meanwhile makes no more (row 165's class).
      await holdActingKey(m, orgId, actingKey);
      if (count >= this.maxCollections) throw tooManyCollections(this.maxCollections);
      await m.query(`INSERT INTO knowledge_collection (id, org_id, name, description) VALUES ($1, $2, $3, $4)`, [id, orgId, dto.name, dto.description ?? null]);
    });
    return this.getCollection(orgId, id);
  }

  async listCollections(orgId: string, query: PageQuery): Promise<Page<CollectionView>> {
    return newestFirstPage(
      this.dataSource,
      { select: `SELECT ${COLLECTION_COLUMNS} FROM knowledge_collection c`, where: 'c.org_id = $1', params: [orgId], alias: 'c' },
      query,
      toCollection,
    );
  }

  async getCollection(orgId: string, id: string): Promise<CollectionView> {
    const [row]: CollectionRow[] = await this.dataSource.query(`SELECT ${COLLECTION_COLUMNS} FROM knowledge_collection c WHERE c.org_id = $1 AND c.id = $2`, [
      orgId,
      id,
    ]);
    if (!row) throw ApiError.notFound('knowledge collection');
    return toCollection(row);
  }

  /** Refused while a published version binds the collection: that version must keep working. */
  async deleteCollection(orgId: string, id: string, actingKey?: string): Promise<void> {
    await this.dataSource.transaction((m) =>
      deleteUnlessBound('knowledge collection', {
        lock: async () => {
          const [row]: unknown[] = await m.query(`SELECT 1 FROM knowledge_collection WHERE org_id = $1 AND id = $2 FOR UPDATE`, [orgId, id]);
          await holdActingKey(m, orgId, actingKey);
          return row;
        },
        boundBy: () =>
          m.query(`SELECT agent_id, version FROM agent_version_resource WHERE org_id = $1 AND collection_id = $2 ORDER BY agent_id, version LIMIT 20`, [
            orgId,
            id,
          ]),
        // Its documents go with it (ON DELETE CASCADE).
        remove: () => m.query(`DELETE FROM knowledge_collection WHERE org_id = $1 AND id = $2`, [orgId, id]),
      }),
    );
  }

  async createDocument(orgId: string, collectionId: string, dto: CreateDocumentDto, actingKey?: string): Promise<DocumentView> {
    return this.uploads.run(orgId, () => this.insertDocument(orgId, collectionId, dto, actingKey));
  }

  private async insertDocument(orgId: string, collectionId: string, dto: CreateDocumentDto, actingKey?: string): Promise<DocumentView> {
    const id = randomUUID();
    return this.dataSource.transaction(async (m) => {
      // FOR KEY SHARE: the collection cannot be deleted while the document goes in.
      const found: unknown[] = await m.query(`SELECT 1 FROM knowledge_collection WHERE org_id = $1 AND id = $2 FOR KEY SHARE`, [orgId, collectionId]);
      if (found.length === 0) throw ApiError.notFound('knowledge collection');
      // Checked under the organization's lock, so documents added at once cannot pass it together;
      // what a row stores of the caller's: its text, title and metadata (counted by content alone,
      // metadata of a megabyte a document went past the limit 94 times: attack round 7). The stored
      // total is kept by the database's triggers (knowledge_usage), not summed here per insert.
      await m.query(`SELECT pg_advisory_xact_lock(hashtextextended('knowledge_document:' || $1::text, 0))`, [orgId]);
      // Uploads queue on this node and on that lock: a key revoked meanwhile stores nothing.
      await holdActingKey(m, orgId, actingKey);
      // Counted in number too: an empty document counts 3 bytes here and takes about 540 on the volume.
      const [{ stored, adding, documents }]: { stored: string; adding: string; documents: string }[] = await m.query(
        `SELECT coalesce(u.bytes, 0)::text AS stored, coalesce(u.documents, 0)::text AS documents,
                (octet_length($2::text) + octet_length($3::text) + octet_length($4::jsonb::text))::text AS adding
           FROM (SELECT 1) one LEFT JOIN knowledge_usage u ON u.org_id = $1`,
        [orgId, dto.content, dto.title, JSON.stringify(dto.metadata ?? {})],
      );
      if (Number(documents) >= this.maxDocuments) throw tooManyDocuments(this.maxDocuments);
      if (Number(stored) + Number(adding) > this.maxBytes) throw storageFull(Number(stored), Number(adding), this.maxBytes);
      let row: DocumentRow;
      try {
        [row] = await m.query(
          `INSERT INTO knowledge_document (id, org_id, collection_id, title, content, metadata) VALUES ($1, $2, $3, $4, $5, $6::jsonb)
           RETURNING id, collection_id, title, metadata, content, content_chars AS content_length, created_at`,
          [id, orgId, collectionId, dto.title, dto.content, JSON.stringify(dto.metadata ?? {})],
        );
      } catch (err) {
        // A search index (tsvector) holds at most 1 MiB of distinct words with their positions: a
        // text under the size limit made of enough different words does not fit. Refused whole,
        // never stored unsearchable or half-indexed, so search answers stay true.
        if (isProgramLimitExceeded(err)) throw notIndexable();
        throw err;
      }
      // Its search vector's words weigh too (64 bytes each and three times their bytes, migrations 1764900000001, 1765100000000), known only once
      // the database made it: the statement's trigger added them, and passing the bound undoes the insert.
      const [{ now }]: { now: string }[] = await m.query(`SELECT bytes::text AS now FROM knowledge_usage WHERE org_id = $1`, [orgId]);
      if (Number(now) > this.maxBytes) throw storageFull(Number(stored), Number(now) - Number(stored), this.maxBytes);
      await touch(m, orgId, collectionId);
      return toDocument(row);
    });
  }

  async listDocuments(orgId: string, collectionId: string, query: PageQuery): Promise<Page<DocumentSummaryView>> {
    await this.assertCollection(orgId, collectionId);
    // content_chars, stored when written: length(content) read every document of the page whole
    // (200 MB a page of 200 documents of a megabyte, attack round 14, N-F1).
    return newestFirstPage(
      this.dataSource,
      {
        select: 'SELECT id, collection_id, title, metadata, metadata_bytes, content_chars AS content_length, created_at FROM knowledge_document',
        where: 'org_id = $1 AND collection_id = $2',
        params: [orgId, collectionId],
        bytes: ['w.metadata_bytes', 'octet_length(w.title)'],
      },
      query,
      toDocumentSummary,
    );
  }

  async getDocument(orgId: string, collectionId: string, id: string): Promise<DocumentView> {
    const [row]: DocumentRow[] = await this.dataSource.query(
      `SELECT id, collection_id, title, metadata, content, content_chars AS content_length, created_at FROM knowledge_document
        WHERE org_id = $1 AND collection_id = $2 AND id = $3`,
      [orgId, collectionId, id],
    );
    if (!row) throw ApiError.notFound('document');
    return toDocument(row);
  }

  async deleteDocument(orgId: string, collectionId: string, id: string, actingKey?: string): Promise<void> {
    await this.dataSource.transaction(async (m) => {
      const [rows]: [unknown[], number] = await m.query(`DELETE FROM knowledge_document WHERE org_id = $1 AND collection_id = $2 AND id = $3 RETURNING id`, [
        orgId,
        collectionId,
        id,
      ]);
      if (rows.length === 0) throw ApiError.notFound('document');
      await holdActingKey(m, orgId, actingKey);
      await touch(m, orgId, collectionId);
    });
  }

  /**
   * The collections among `ids` in the organization, in the order asked. Every build asks: names and descriptions never change,
   * so each is read once per node, counts every time (read whole, 200 were 1.76 MB a tool call: attack round 16, T-F4).
   */
  async resolve(orgId: string, ids: readonly string[]): Promise<ResolvedKnowledgeCollection[]> {
    if (ids.length === 0) return [];
    const known = new Map(ids.flatMap((id) => (this.texts.get(`${orgId}/${id}`) ? [[id, this.texts.get(`${orgId}/${id}`)!] as const] : [])));
    const rows: ResolvedCollectionRow[] = await this.dataSource.query(RESOLVE_SQL, [orgId, ids, [...known.keys()]]);
    const byId = new Map(rows.map((r) => [r.id, r]));
    return ids.flatMap((id) => {
      const r = byId.get(id);
      if (!r) return [];
      let text = known.get(id);
      if (!text || r.name !== null) {
        text = { name: r.name!, description: r.description };
        this.texts.set(`${orgId}/${id}`, text);
      }
      return [{ id: r.id, name: text.name, description: text.description, documentCount: Number(r.document_count) }];
    });
  }

  /**
   * Full-text search in the given collections, best first (the `search_knowledge` tool), a quarter
   * of the pool's connections at most for the organization's at once on this node; `signal` ends a
   * wait for a turn.
   */
  searchDocuments(orgId: string, collectionIds: readonly string[], query: string, limit: number, signal?: AbortSignal): Promise<KnowledgeHitRow[]> {
    return this.searches.run(orgId, () => this.dataSource.query(SEARCH_SQL, [orgId, collectionIds, query, limit]), signal);
  }

  /** A page of one document of the given collections (the `read_document` tool). */
  async readDocumentPage(
    orgId: string,
    collectionIds: readonly string[],
    documentId: string,
    offset: number,
    maxChars: number,
  ): Promise<DocumentPageRow | undefined> {
    const [row]: DocumentPageRow[] = await this.dataSource.query(READ_SQL, [orgId, collectionIds, documentId, offset, maxChars]);
    return row;
  }

  /** How many searchable words the full-text parser finds in a query (0: only stop words). */
  async searchableWords(query: string): Promise<number> {
    const [{ words }]: { words: number }[] = await this.dataSource.query(`SELECT numnode(websearch_to_tsquery('english'::regconfig, $1)) AS words`, [query]);
    return Number(words);
  }

  private async assertCollection(orgId: string, id: string): Promise<void> {
    const found: unknown[] = await this.dataSource.query(`SELECT 1 FROM knowledge_collection WHERE org_id = $1 AND id = $2`, [orgId, id]);
    if (found.length === 0) throw ApiError.notFound('knowledge collection');
  }
}

async function touch(m: EntityManager, orgId: string, collectionId: string): Promise<void> {
  await m.query(`UPDATE knowledge_collection SET updated_at = now() WHERE org_id = $1 AND id = $2`, [orgId, collectionId]);
}
