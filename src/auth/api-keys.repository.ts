import { Injectable } from '@nestjs/common';
import { DataSource, EntityManager } from 'typeorm';
import { ApiError } from '../common/api-error';
import type { Page, PageQuery } from '../common/pagination';
import { Batcher } from '../database/batcher';
import { newestFirstPage } from '../database/keyset-page';
import { COUNT_LIVE_KEYS, KEY_IS_LIVE, liveKeyCondition } from '../database/live-key';
import { holdOrgCountLock } from '../database/org-limit';
import type { Role } from './principal';

/** A key as its organization's admins see it (never its token or hash). */
export interface ApiKeyRow {
  id: string;
  name: string;
  roles: Role[];
  token_prefix: string;
  created_at: Date;
  revoked_at: Date | null;
  expires_at: Date | null;
  /** The agents it may act for; null: every agent of its organization. */
  agent_ids: string[] | null;
  /** When it last authenticated a request, to within a node's sweep (ApiKeyUsage); null: never since it was made (or the upgrade). */
  last_used_at: Date | null;
}

const K_IS_LIVE = liveKeyCondition('k');
const KEY_VIEW_COLUMNS = 'id, name, roles, token_prefix, created_at, revoked_at, expires_at, agent_ids, last_used_at';

/** What authentication needs: the key and its organization's scopes, read in one query. */
export interface ActiveKeyRow {
  id: string;
  org_id: string;
  roles: Role[];
  token_hash: string;
  scopes: string[];
  /** When it stops being accepted; null: until revoked. */
  expires_at: Date | null;
  /** The agents it may act for; null: every agent of its organization. */
  agent_ids: string[] | null;
}

/** `ActiveKeyRow` with the agent of the route and its switches (`findActiveWithAgent`). */
export interface ActiveKeyWithAgentRow extends ActiveKeyRow {
  agent_id: string | null;
  agent_slug: string | null;
  agent_name: string | null;
  agent_latest_version: number | null;
  version_retired: boolean;
  /** The tools the organization disabled, when there are at most KEY_LOOKUP_SWITCHES; null when more (or no agent was asked for). */
  disabled_tools: { capabilityId: string; toolId: string }[] | null;
}

/**
 * The most switches the key lookup carries. Every request's lookup shares one statement with
 * other organizations' (Batcher), so what it reads must stay small: carrying every switch with its
 * reason, one organization's 3,000 invented ones (2.5 KB each) made every tool call of every
 * organization on the node wait seconds (attack round 8). Past it, and for a tool the lookup says
 * is disabled, the call reads its own tool's switch (GovernanceRepository.factsFor).
 */
export const KEY_LOOKUP_SWITCHES = 32;

interface KeyLookup {
  digest: string;
  /** A UUID (the caller checked), or null for the key alone. */
  agentId: string | null;
  version: number | null;
}

/** Past this many a lookup waits for the next statement (a bound on one statement's size). */
const KEY_LOOKUP_BATCH_MAX = 64;
/** Statements out at once: with one, every lookup would wait for the previous one. */
const KEY_LOOKUPS_IN_FLIGHT = 2;

/**
 * The owner of `api_key`. Writes take the organization first and, when they are part of a larger
 * change (an audit event beside them), the transaction's manager.
 */
@Injectable()
export class ApiKeysRepository {
  constructor(private readonly dataSource: DataSource) {}

  /** The live key (not revoked nor expired) with this token digest, with its organization's scopes. Not tenant-scoped: this is how the tenant is learned. */
  async findActiveByDigest(digestHex: string): Promise<ActiveKeyRow | undefined> {
    return (await this.lookups.submit({ digest: digestHex, agentId: null, version: null })) ?? undefined;
  }

  /**
   * The key as `findActiveByDigest`, with the agent a tool call names and the switches that
   * apply to it, in one round trip (docs/benchmarks.md): the agent's row and `latest` pointer,
   * whether the version asked for (the pointer when null) is retired, and the organization's
   * disabled tools (one row per disabled tool; there are never many). The agent and switch
   * tables are owned elsewhere (governance.repository.ts, the agents' files); this only reads them,
   * in the one statement that must come first on every call anyway.
   */
  async findActiveWithAgent(digestHex: string, agentId: string, version: number | null): Promise<ActiveKeyWithAgentRow | undefined> {
    return (await this.lookups.submit({ digest: digestHex, agentId, version })) ?? undefined;
  }

  /**
   * Every request's first statement, so the one most worth sharing: the lookups of requests that
   * arrive while earlier ones are out are made by one statement (Batcher). Each request's key is
   * still read after the request arrived, so revocation stays immediate on every node.
   */
  private readonly lookups = new Batcher<KeyLookup, ActiveKeyWithAgentRow | null>((qs) => this.lookupMany(qs), {
    maxBatch: KEY_LOOKUP_BATCH_MAX,
    maxInFlight: KEY_LOOKUPS_IN_FLIGHT,
  });

  private async lookupMany(qs: KeyLookup[]): Promise<(ActiveKeyWithAgentRow | null)[]> {
    const rows: (ActiveKeyWithAgentRow & { i: string })[] = await this.dataSource.query(
      `SELECT q.i, k.id, k.org_id, k.roles, k.token_hash, k.expires_at, k.agent_ids, o.scopes,
              a.id AS agent_id, a.slug AS agent_slug, a.name AS agent_name, a.latest_version AS agent_latest_version,
              EXISTS (SELECT 1 FROM agent_version_retirement r
                       WHERE r.org_id = k.org_id AND r.agent_id = a.id AND r.version = COALESCE(q.version, a.latest_version)) AS version_retired,
              CASE WHEN q.agent_id IS NOT NULL THEN
                (SELECT CASE WHEN count(*) <= ${KEY_LOOKUP_SWITCHES} THEN coalesce(json_agg(json_build_object('capabilityId', d.capability_id, 'toolId', d.tool_id)), '[]') END
                   FROM (SELECT capability_id, tool_id FROM tool_disabled WHERE org_id = k.org_id LIMIT ${KEY_LOOKUP_SWITCHES + 1}) d) END AS disabled_tools
         FROM unnest($1::text[], $2::uuid[], $3::integer[]) WITH ORDINALITY AS q(digest, agent_id, version, i)
         JOIN api_key k ON k.token_hash = q.digest AND ${K_IS_LIVE}
         JOIN org o ON o.id = k.org_id
         LEFT JOIN agent a ON a.org_id = k.org_id AND a.id = q.agent_id`,
      [qs.map((q) => q.digest), qs.map((q) => q.agentId), qs.map((q) => q.version)],
    );
    const found: (ActiveKeyWithAgentRow | null)[] = qs.map(() => null);
    // `i` is a bigint, which pg answers as a string; ordinality counts from 1.
    for (const { i, ...row } of rows) found[Number(i) - 1] = row;
    return found;
  }

  /** The organization's keys not revoked nor expired, counted under its lock for keys (held to the end of `m`): creations at once count one after another. */
  async countActiveUnderLock(orgId: string, m: EntityManager): Promise<number> {
    await holdOrgCountLock(m, 'api_key', orgId);
    const [{ n }]: { n: number }[] = await m.query(`SELECT (${COUNT_LIVE_KEYS})::int AS n`, [orgId]);
    return n;
  }

  /**
   * When organization `orgId` may make its next key, if it made `perDay` in the last 24 hours (the
   * moment the oldest of them turns a day old); null when it may now. Asked under the count's lock
   * (countActiveUnderLock), so creations at once are counted one after another. At most `perDay`
   * entries of `api_key_org_idx` are read, however many keys the organization ever made.
   */
  async nextCreationAt(orgId: string, perDay: number, m: EntityManager): Promise<Date | null> {
    const [row]: { made: number; next: Date | null }[] = await m.query(
      `SELECT count(*)::int AS made, min(k.created_at) + interval '1 day' AS next
         FROM (SELECT created_at FROM api_key
                WHERE org_id = $1 AND created_at > statement_timestamp() - interval '1 day'
                ORDER BY created_at DESC LIMIT $2) k`,
      [orgId, perDay],
    );
    return row.made >= perDay ? new Date(row.next!) : null;
  }

  async insert(
    orgId: string,
    key: { id: string; name: string; roles: Role[]; tokenPrefix: string; tokenHash: string; expiresAt: Date | null; agentIds: string[] | null },
    m: EntityManager,
  ): Promise<ApiKeyRow> {
    const [row]: ApiKeyRow[] = await m.query(
      `INSERT INTO api_key (id, org_id, name, roles, token_prefix, token_hash, expires_at, agent_ids) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
       RETURNING ${KEY_VIEW_COLUMNS}`,
      [key.id, orgId, key.name, key.roles, key.tokenPrefix, key.tokenHash, key.expiresAt, key.agentIds],
    );
    return row;
  }

  list<T>(orgId: string, query: PageQuery, view: (row: ApiKeyRow) => T): Promise<Page<T>> {
    return newestFirstPage(this.dataSource, { select: `SELECT ${KEY_VIEW_COLUMNS} FROM api_key`, where: 'org_id = $1', params: [orgId] }, query, view);
  }

  /**
   * `revoked`: this call revoked it; `already`: it was revoked before; `missing`: no such key here.
   * `actingKey`: the key revoking (when another): both rows are locked first, in id order, and the
   * acting one must still be live. A request is authorized when it arrives, and a revocation waits
   * for the target's in-flight changes (they hold its row) or a pool connection: a leaked admin key
   * revoking the organization's own admin keys in a burst went on revoking after its own revocation
   * had committed. In id order, two keys revoking each other at once are one after the other (the
   * second is `401`), never a deadlock.
   */
  async revoke(orgId: string, keyId: string, m: EntityManager, actingKey?: string): Promise<'revoked' | 'already' | 'missing'> {
    if (actingKey !== undefined && actingKey !== keyId) {
      const locked: { id: string; live: boolean }[] = await m.query(
        `SELECT id, ${KEY_IS_LIVE} AS live FROM api_key WHERE org_id = $1 AND id = ANY ($2::uuid[]) ORDER BY id FOR UPDATE`,
        [orgId, [actingKey, keyId]],
      );
      if (!locked.some((k) => k.id === actingKey && k.live))
        throw ApiError.unauthorized('The key was revoked, or expired, while this request waited; nothing was changed.');
    }
    const [rows]: [{ id: string }[], number] = await m.query(
      `UPDATE api_key SET revoked_at = now() WHERE id = $1 AND org_id = $2 AND revoked_at IS NULL RETURNING id`,
      [keyId, orgId],
    );
    if (rows.length > 0) return 'revoked';
    const known: unknown[] = await m.query(`SELECT 1 FROM api_key WHERE id = $1 AND org_id = $2`, [keyId, orgId]);
    return known.length > 0 ? 'already' : 'missing';
  }

  /** The live key (not revoked nor expired) with this id, with its organization's scopes as they are now (a run acting for the key that started it). */
  async findActiveById(orgId: string, keyId: string): Promise<Omit<ActiveKeyRow, 'token_hash'> | undefined> {
    const rows: Omit<ActiveKeyRow, 'token_hash'>[] = await this.dataSource.query(
      `SELECT k.id, k.org_id, k.roles, k.expires_at, k.agent_ids, o.scopes FROM api_key k JOIN org o ON o.id = k.org_id
        WHERE k.org_id = $1 AND k.id = $2 AND ${K_IS_LIVE}`,
      [orgId, keyId],
    );
    return rows[0];
  }

  /**
   * Records when these keys were last used (ids in order, so two nodes' writes lock rows in one
   * order), never moving a time back (another node may have written a later one). A key's row that
   * another transaction holds (its revocation, a creation it makes) is skipped, not waited for: its
   * ids are answered, for the next sweep.
   */
  async recordUse(uses: { id: string; at: Date }[]): Promise<string[]> {
    const sorted = [...uses].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    const rows: { id: string }[] = await this.dataSource.query(
      `WITH v AS (SELECT * FROM unnest($1::uuid[], $2::timestamptz[]) AS v(id, at)),
            held AS (SELECT k.id FROM api_key k JOIN v ON v.id = k.id ORDER BY k.id FOR UPDATE OF k SKIP LOCKED),
            done AS (UPDATE api_key k SET last_used_at = v.at FROM v, held
                      WHERE k.id = v.id AND held.id = k.id AND (k.last_used_at IS NULL OR k.last_used_at < v.at)
                      RETURNING k.id)
       SELECT v.id FROM v JOIN api_key k ON k.id = v.id WHERE NOT EXISTS (SELECT 1 FROM held WHERE held.id = v.id)`,
      [sorted.map((u) => u.id), sorted.map((u) => u.at)],
    );
    return rows.map((r) => r.id);
  }

  /** Which of these API keys are live, not revoked nor expired (liveKeySql asks the same inside another read). */
  async liveKeys(keyIds: string[]): Promise<string[]> {
    const rows: { id: string }[] = await this.dataSource.query(`SELECT id FROM api_key WHERE id = ANY ($1::uuid[]) AND ${KEY_IS_LIVE}`, [keyIds]);
    return rows.map((r) => r.id);
  }
}

/**
 * True while the key whose id is the parameter `param` (e.g. `$4`) is live (not revoked nor expired): for a stream's
 * read, so that the key is judged in the snapshot its events are read with. An event committed after
 * the revocation is only visible to snapshots that also see the key revoked.
 */
export function liveKeySql(param: string): string {
  return `EXISTS (SELECT 1 FROM api_key WHERE id = ${param}::uuid AND ${KEY_IS_LIVE})`;
}

/**
 * The organization's scopes, and whether the API key `keyId` (null: not a key's request) is still
 * not revoked, both locked to the end of `m`'s transaction (FOR SHARE): an approval, which runs a
 * tool with what its request was authorized with when it arrived, commits before a scope is removed
 * or its key revoked, or reads it (attack round 13, M-F1).
 */
export async function holdAuthority(
  m: Pick<EntityManager, 'query'>,
  orgId: string,
  keyId: string | null,
): Promise<{ scopes: string[]; keyLive: boolean } | undefined> {
  const rows: { scopes: string[]; key_live: boolean }[] = await m.query(
    `SELECT o.scopes, k.id IS NOT NULL AS key_live
       FROM org o
       LEFT JOIN LATERAL (SELECT id FROM api_key WHERE org_id = o.id AND id = $2::uuid AND ${KEY_IS_LIVE} FOR SHARE) k ON true
      WHERE o.id = $1
        FOR SHARE OF o`,
    [orgId, keyId],
  );
  return rows[0] && { scopes: rows[0].scopes, keyLive: rows[0].key_live };
}
