import { ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsInt, IsOptional, IsString, Max, MaxLength, Min } from 'class-validator';
import { decimalInteger } from './decimal-integer';
import { ApiError } from './api-error';
import { yearInRange } from './instant';

/** `?limit=` and `?cursor=`, shared by every list. */
export class PageQuery {
  @ApiPropertyOptional({
    minimum: 1,
    maximum: 200,
    default: 50,
    description:
      'The most items a page holds. A page may hold fewer when its items are large (it ends once they pass about 4 MiB, ' +
      'with at least one item); `nextCursor` is null only on the last page, so follow it rather than counting items.',
  })
  @IsOptional()
  @Transform(decimalInteger)
  @IsInt()
  @Min(1)
  @Max(200)
  limit?: number;

  @ApiPropertyOptional({ description: "Opaque cursor from a previous page's `nextCursor`." })
  @IsOptional()
  @IsString()
  @MaxLength(512)
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

/**
 * What each position of a sort key must be. A cursor is opaque to clients but not trusted: one
 * that was edited, or issued by another list, is a 400, never a query that fails in the database.
 */
export type CursorPart = 'text' | 'int' | 'timestamp' | 'uuid';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
// What PostgreSQL prints for a timestamptz in UTC, to the microsecond (see newestFirstPage).
const TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,6})?Z$/;

function partOk(part: CursorPart, v: unknown): boolean {
  switch (part) {
    case 'text':
      return typeof v === 'string' && v.length <= 512 && !v.includes('\u0000');
    case 'int':
      return typeof v === 'number' && Number.isInteger(v) && v >= 0 && v <= 2147483647;
    case 'timestamp':
      // Round-tripped to the second: JavaScript reads 2026-02-30 as March 2, PostgreSQL refuses it.
      return (
        typeof v === 'string' &&
        TIMESTAMP.test(v) &&
        yearInRange(v) &&
        !Number.isNaN(Date.parse(v)) &&
        new Date(v).toISOString().slice(0, 19) === v.slice(0, 19)
      );
    case 'uuid':
      return typeof v === 'string' && UUID.test(v);
  }
}

export function decodeCursor(cursor: string | undefined, parts: readonly CursorPart[]): unknown[] | undefined {
  if (cursor === undefined) return undefined;
  try {
    const key: unknown = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
    if (Array.isArray(key) && key.length === parts.length && key.every((v, i) => partOk(parts[i], v))) return key;
  } catch {
    // fall through
  }
  throw invalidCursor();
}

/** A `cursor` this API did not issue (edited, another list's, another organization's): 400 naming it. */
export function invalidCursor(): ApiError {
  return ApiError.invalidRequest([{ path: 'cursor', code: 'invalid_cursor', message: 'cursor is not one this API issued' }]);
}

/**
 * The most a page's items may take, serialized, before the page ends early: a list of agents with
 * megabyte drafts answered 194 MB at `limit=200`, and four such reads took the server to 2.8 GB.
 * The item that passes the budget is kept (a page always holds at least one), so a page is at most
 * this plus one item; `nextCursor` points past the last item kept and the client pages on.
 */
export const PAGE_BYTE_BUDGET = 4 * 1024 * 1024;

/** Bytes of `item` as JSON, as the answer will carry it. */
function serializedBytes(item: unknown): number {
  let json: string | undefined;
  try {
    json = JSON.stringify(item);
  } catch {
    json = JSON.stringify(item, (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v));
  }
  return json === undefined ? 0 : Buffer.byteLength(json, 'utf8');
}

/** Makes items 0..count-1 in order until the page passes `budget` bytes (at least one). */
function takeWithinBudget<T>(count: number, make: (i: number) => T, budget: number): T[] {
  const items: T[] = [];
  let bytes = 0;
  for (let i = 0; i < count && (i === 0 || bytes < budget); i++) {
    const item = make(i);
    items.push(item);
    bytes += serializedBytes(item);
  }
  return items;
}

/**
 * Fetch `limit + 1` rows, then call this: it trims the extra row, ends the page early past the
 * byte budget, and makes the next cursor from the last item kept. `found`: how many rows the
 * query matched up to `limit + 1`, when the database already ended the page at the budget and
 * sent fewer (rowsWithinBudget, src/database/keyset-page.ts).
 */
export function pageOf<R, T>(
  rows: R[],
  limit: number,
  keyOf: (row: R) => unknown[],
  map: (row: R) => T,
  budget = PAGE_BYTE_BUDGET,
  found = rows.length,
): Page<T> {
  const items = takeWithinBudget(Math.min(limit, rows.length), (i) => map(rows[i]), budget);
  const more = Math.max(found, rows.length) > items.length;
  return { items, nextCursor: more ? encodeCursor(keyOf(rows[items.length - 1])) : null };
}

/**
 * A page of a list computed in memory and sorted by a unique text key (the capability catalog):
 * the cursor is the key of the last item returned, so a page boundary survives items coming and
 * going between requests.
 */
export function pageByKey<T>(items: readonly T[], query: PageQuery, keyOf: (item: T) => string): Page<T> {
  const after = decodeCursor(query.cursor, ['text'])?.[0] as string | undefined;
  const rest = after === undefined ? items : items.filter((item) => keyOf(item) > after);
  return pageOf(
    [...rest.slice(0, (query.limit ?? DEFAULT_LIMIT) + 1)],
    query.limit ?? DEFAULT_LIMIT,
    (item) => [keyOf(item)],
    (item) => item,
  );
}

/**
 * A page of a short list computed in memory whose order is meaningful but not sorted by a key
 * (the tools a version offers, in spec order): the cursor is the position of the next item.
 */
export function pageByPosition<T>(items: readonly T[], query: PageQuery, budget = PAGE_BYTE_BUDGET): Page<T> {
  const limit = query.limit ?? DEFAULT_LIMIT;
  const start = Number(decodeCursor(query.cursor, ['int'])?.[0] ?? 0);
  const page = takeWithinBudget(Math.min(limit, Math.max(0, items.length - start)), (i) => items[start + i], budget);
  const end = start + page.length;
  return { items: page, nextCursor: end < items.length ? encodeCursor([end]) : null };
}
