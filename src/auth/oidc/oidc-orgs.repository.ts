import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const SLUG = /^[a-z0-9][a-z0-9-]{1,62}$/;

/** The organization a token names (by id or slug), with its granted scopes. */
export interface TokenOrgRow {
  id: string;
  scopes: string[];
}

/**
 * Reads `org` for sign-in through the identity provider. Not tenant-scoped: this is how the
 * tenant of a token is learned, as the API-key lookup learns it from the key.
 */
@Injectable()
export class OidcOrgsRepository {
  constructor(private readonly dataSource: DataSource) {}

  async findByIdOrSlug(ref: string): Promise<TokenOrgRow | undefined> {
    // A value that is neither shape cannot match; no query for it.
    if (UUID.test(ref)) {
      // Slugs shaped like a UUID are refused since, but one stored before may equal another
      // organization's id: a claim naming two organizations names none.
      const rows: TokenOrgRow[] = await this.dataSource.query(`SELECT id, scopes FROM org WHERE id = $1 OR slug = $2 LIMIT 2`, [ref.toLowerCase(), ref]);
      return rows.length === 1 ? rows[0] : undefined;
    }
    if (!SLUG.test(ref)) return undefined;
    const rows: TokenOrgRow[] = await this.dataSource.query(`SELECT id, scopes FROM org WHERE slug = $1`, [ref]);
    return rows[0];
  }
}
