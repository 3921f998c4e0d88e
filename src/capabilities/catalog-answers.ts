import { createHash } from 'node:crypto';
import { LruCache } from '../common/lru-cache';
import { DEFAULT_LIMIT, pageByKey, PageQuery } from '../common/pagination';
import { CapabilityDescriptor, catalogView, CatalogFilter } from './capability-catalog';

export interface CatalogAnswer {
  /** The JSON of `{ items, nextCursor }`, encoded once: sent as is, not re-encoded per request. */
  body: Buffer;
  /** A strong ETag of the body. */
  etag: string;
}

/** Memory the kept answers may take, whatever the size of the catalog. */
export const CATALOG_ANSWERS_BYTES = 32 * 1024 * 1024;

/**
 * The catalog route's answers, serialized once per filter and set of granted scopes. The catalog
 * never changes in a running process, so an answer depends on nothing else; making it (the view
 * with `available`, its JSON, its hash) cost more than the rest of the request together (see
 * docs/benchmarks.md).
 */
export class CatalogAnswers {
  private readonly answers: LruCache<string, CatalogAnswer>;

  constructor(private readonly catalog: readonly CapabilityDescriptor[]) {
    const full = Buffer.byteLength(JSON.stringify({ items: catalog }));
    this.answers = new LruCache(Math.min(256, Math.max(8, Math.floor(CATALOG_ANSWERS_BYTES / full))));
  }

  /** How many answers are kept at most (for tests). */
  get capacity(): number {
    return this.answers.capacity;
  }

  /**
   * One page of the filtered catalog (API.md: lists take `limit` and `cursor`). `grantedScopes`
   * only for an organization's key (API.md: `available`). A cursor this API did not issue is a
   * 400 before anything is kept.
   */
  answer(filter: CatalogFilter, grantedScopes?: readonly string[], page: PageQuery = {}): CatalogAnswer {
    const scopes = grantedScopes ? sortedUnique(grantedScopes) : null;
    const key = JSON.stringify([
      filter.category ?? null,
      filter.tag ?? null,
      filter.profile ?? null,
      filter.workerType ?? null,
      filter.risk ?? null,
      scopes,
      page.limit ?? DEFAULT_LIMIT,
      page.cursor ?? null,
    ]);
    let answer = this.answers.get(key);
    if (!answer) {
      const body = Buffer.from(JSON.stringify(pageByKey(catalogView(this.catalog, filter, scopes ?? undefined), page, (d) => d.id)));
      answer = { body, etag: `"${createHash('sha256').update(body).digest('base64url')}"` };
      this.answers.set(key, answer);
    }
    return answer;
  }
}

/** The scopes as a set in order; an organization's usually are already, and are then used as they are (every request asks). */
function sortedUnique(scopes: readonly string[]): readonly string[] {
  for (let i = 1; i < scopes.length; i++) {
    if (!(scopes[i - 1] < scopes[i])) return [...new Set(scopes)].sort();
  }
  return scopes;
}
