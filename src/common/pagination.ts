import { ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { IsInt, IsOptional, IsString, Max, MaxLength, Min } from 'class-validator';
import { ApiError } from './api-error';

/** `?limit=` and `?cursor=`, shared by every list. */
export class PageQuery {
  @ApiPropertyOptional({ minimum: 1, maximum: 200, default: 50 })
  @IsOptional() @Type(() => Number) @IsInt() @Min(1) @Max(200)
  limit?: number;

  @ApiPropertyOptional({ description: 'Opaque cursor from a previous page\'s `nextCursor`.' })
  @IsOptional() @IsString() @MaxLength(512)
  cursor?: string;
}

export interface Page<T> {
  items: T[];
  nextCursor: string | null;
}

export const DEFAULT_LIMIT = 50;

/** Cursors are opaque to clients: base64url of the sort key of the last item returned. */
export function encodeCursor(key: unknown[]): string {
  return Buffer.from(JSON.stringify(key), 'utf8').toString('base64url');
}

export function decodeCursor(cursor: string | undefined, arity: number): unknown[] | undefined {
  if (cursor === undefined) return undefined;
  try {
    const key: unknown = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
    if (Array.isArray(key) && key.length === arity && key.every((v) => typeof v === 'string' || typeof v === 'number')) return key;
  } catch {
    // fall through
  }
  throw ApiError.invalidRequest([{ path: 'cursor', code: 'invalid_cursor', message: 'cursor is not one this API issued' }]);
}

/** Fetch `limit + 1` rows, then call this: it trims the extra row and makes the next cursor. */
export function pageOf<R, T>(rows: R[], limit: number, keyOf: (row: R) => unknown[], map: (row: R) => T): Page<T> {
  const more = rows.length > limit;
  const kept = more ? rows.slice(0, limit) : rows;
  return { items: kept.map(map), nextCursor: more ? encodeCursor(keyOf(kept[kept.length - 1])) : null };
}

export interface Queryable {
  query(sql: string, params?: unknown[]): Promise<any>;
}

/**
 * One page of rows newest first, keyed by (created_at, id) so rows created in the same instant
 * still page stably. `where` is the tenant filter with its own parameters ($1..$n); the limit and
 * the cursor take the next ones. `alias` prefixes the key columns when the query joins.
 */
export async function newestFirstPage<R extends { created_at: Date | string; id: string }, T>(
  db: Queryable,
  sql: { select: string; where: string; params: unknown[]; alias?: string },
  query: PageQuery,
  map: (row: R) => T,
): Promise<Page<T>> {
  const limit = query.limit ?? DEFAULT_LIMIT;
  const after = decodeCursor(query.cursor, 2);
  const col = (name: string) => (sql.alias ? `${sql.alias}.${name}` : name);
  const params = [...sql.params, limit + 1];
  const limitParam = `$${params.length}`;
  let cursor = '';
  if (after) {
    params.push(after[0], after[1]);
    cursor = ` AND (${col('created_at')}, ${col('id')}) < ($${params.length - 1}::timestamptz, $${params.length}::uuid)`;
  }
  const rows: R[] = await db.query(
    `${sql.select} WHERE ${sql.where}${cursor} ORDER BY ${col('created_at')} DESC, ${col('id')} DESC LIMIT ${limitParam}`,
    params,
  );
  return pageOf(rows, limit, (r) => [new Date(r.created_at).toISOString(), r.id], map);
}
