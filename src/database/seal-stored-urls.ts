import type { LoggerService } from '@nestjs/common';
import type { DataSource } from 'typeorm';
import { shownUrl, urlHidesSomething } from '../common/url-secrets';

/**
 * Seals the URLs of `table` (a table with `url` and `url_sealed`, named here, never from a request)
 * that were saved whole before URLs holding a token were sealed (migration 1764522300000; those
 * with a token-shaped path segment since session 36): `url` becomes what answers show,
 * `url_sealed` the URL. Each row changes only if it is still as read,
 * so nodes starting together seal it once. Called at start: a failure is logged, and the next start
 * tries again (until then the URL is read whole, and shown as new ones are).
 */
export async function sealStoredUrls(
  db: DataSource,
  table: 'mcp_connection' | 'webhook_endpoint',
  seal: (url: string) => string,
  logger: Pick<LoggerService, 'log' | 'warn'>,
): Promise<void> {
  try {
    const n = await sealEach(db, table, seal);
    if (n > 0) logger.log(`sealed the URLs of ${n} rows of ${table} saved with a query`);
  } catch (err) {
    logger.warn(`sealing the stored URLs of ${table} failed: ${(err as Error).message}`);
  }
}

async function sealEach(db: DataSource, table: string, seal: (url: string) => string): Promise<number> {
  // Every URL that hides something holds one of these characters (a query, a fragment, a user
  // name) or, after the host, a path segment starting with 16 token characters (a token's shape,
  // TOKEN_SEGMENT): the rest, long host names included, are not read at every start.
  const rows: { id: string; org_id: string; url: string }[] = await db.query(
    `SELECT id, org_id, url FROM ${table} WHERE url_sealed IS NULL AND url IS NOT NULL
        AND (strpos(url, '?') > 0 OR strpos(url, '#') > 0 OR strpos(url, '@') > 0 OR url ~ '^[^/]*//[^/]*/(.*/)?[A-Za-z0-9._~+=%-]{16,}')`,
  );
  let sealed = 0;
  for (const r of rows) {
    if (!urlHidesSomething(r.url)) continue;
    const [changed]: [unknown[], number] = await db.query(
      `UPDATE ${table} SET url = $3, url_sealed = $4 WHERE org_id = $1 AND id = $2 AND url = $5 AND url_sealed IS NULL RETURNING id`,
      [r.org_id, r.id, shownUrl(r.url), seal(r.url), r.url],
    );
    sealed += changed.length;
  }
  return sealed;
}
