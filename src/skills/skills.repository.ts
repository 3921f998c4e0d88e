import { Inject, Injectable } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import type { ResolvedSkill } from '../capabilities/capability.types';
import { ApiError } from '../common/api-error';
import { APP_CONFIG, AppConfig } from '../config/app-config';
import { DEFAULT_STORAGE_LIMITS } from '../config/database-config';
import { countingTransaction, countUnderOrgLock, holdActingKey } from '../database/org-limit';
import { Page } from '../common/pagination';
import { Batcher } from '../database/batcher';
import { LruCache } from '../common/lru-cache';
import { newestFirstPage } from '../database/keyset-page';
import { deleteUnlessBound } from '../database/delete-unless-bound';
import { CreateSkillDto, SkillBasicView, SkillsQuery, SkillView } from './skills.dto';

/** A skill's name and description, or null where the statement left them out (kept already). */
type TextRow = { id: string; name: string | null; description: string | null };
type SkillText = Pick<ResolvedSkill, 'name' | 'description'>;

/** The most skills' names and descriptions a node keeps (each up to 8.8 KB), and what they may weigh together (UTF-16). */
const SKILL_TEXTS = 20_000;
const SKILL_TEXTS_BYTES = 32 * 1024 * 1024;

interface SkillRow {
  id: string;
  name: string;
  description: string;
  instructions: string;
  created_at: Date;
}

/**
 * The owner of `skill` (named instructions an agent can bind): the REST resource, the resolution
 * of an agent's skills and the skills tools all read it here. Every method takes the organization first.
 */
@Injectable()
export class SkillsRepository {
  private readonly maxSkills: number;
  /**
   * Skills' names and descriptions by `<org>/<id>`: a skill never changes once made (no route
   * updates it), so a node reads them once; whether it still exists, every time. Read whole, an
   * agent's 200 skills of long descriptions were 1.76 MB at every `list_skills` and `load_skill`,
   * in the queue every organization's lookups share (attack round 16, T-F5).
   */
  private readonly texts = new LruCache<string, SkillText>(SKILL_TEXTS, { max: SKILL_TEXTS_BYTES, of: (t) => 64 + 2 * (t.name.length + t.description.length) });

  constructor(
    private readonly dataSource: DataSource,
    @Inject(APP_CONFIG) config: AppConfig,
  ) {
    this.maxSkills = (config.storage ?? DEFAULT_STORAGE_LIMITS).skillsPerOrg;
  }

  /** At most SKILLS_MAX_PER_ORG per organization (409), counted under its lock: each skill is up to 400 KB of the shared volume. */
  async create(orgId: string, dto: CreateSkillDto, actingKey?: string): Promise<SkillView> {
    return countingTransaction(this.dataSource, 'skill', orgId, async (m) => {
      const count = await countUnderOrgLock(m, 'skill', orgId);
      // Creations queue on the count's lock: a key revoked meanwhile makes no more skills (row 108's class).
      await holdActingKey(m, orgId, actingKey);
      if (count >= this.maxSkills) {
        throw ApiError.conflict(`An organization has at most ${this.maxSkills} skills (SKILLS_MAX_PER_ORG); delete one first.`);
      }
      const [row]: SkillRow[] = await m.query(`INSERT INTO skill (id, org_id, name, description, instructions) VALUES ($1, $2, $3, $4, $5) RETURNING *`, [
        randomUUID(),
        orgId,
        dto.name,
        dto.description,
        dto.instructions,
      ]);
      return toSkill(row);
    });
  }

  async list(orgId: string, query: SkillsQuery): Promise<Page<SkillView | SkillBasicView>> {
    if (query.view === 'basic') {
      // The instructions stay in the database: a picker of 200 skills was up to 4 MiB a page of them (attack round 13, L).
      return newestFirstPage(
        this.dataSource,
        {
          select: 'SELECT id, name, description, char_length(instructions) AS instructions_length, created_at FROM skill',
          where: 'org_id = $1',
          params: [orgId],
          bytes: ['octet_length(w.name)', 'octet_length(w.description)'],
        },
        query,
        (row: Omit<SkillRow, 'instructions'> & { instructions_length: number }): SkillBasicView => ({
          id: row.id,
          name: row.name,
          description: row.description,
          instructionsLength: Number(row.instructions_length),
          createdAt: new Date(row.created_at).toISOString(),
        }),
      );
    }
    return newestFirstPage(
      this.dataSource,
      { select: 'SELECT * FROM skill', where: 'org_id = $1', params: [orgId], bytes: ['octet_length(w.instructions)', 'octet_length(w.description)'] },
      query,
      toSkill,
    );
  }

  async get(orgId: string, id: string): Promise<SkillView> {
    const [row]: SkillRow[] = await this.dataSource.query(`SELECT * FROM skill WHERE org_id = $1 AND id = $2`, [orgId, id]);
    if (!row) throw ApiError.notFound('skill');
    return toSkill(row);
  }

  /** Refused while a published version binds the skill, like a knowledge collection. */
  async delete(orgId: string, id: string, actingKey?: string): Promise<void> {
    await this.dataSource.transaction((m) =>
      deleteUnlessBound('skill', {
        lock: async () => {
          const [row]: unknown[] = await m.query(`SELECT 1 FROM skill WHERE org_id = $1 AND id = $2 FOR UPDATE`, [orgId, id]);
          await holdActingKey(m, orgId, actingKey);
          return row;
        },
        boundBy: () =>
          m.query(`SELECT agent_id, version FROM agent_version_resource WHERE org_id = $1 AND skill_id = $2 ORDER BY agent_id, version LIMIT 20`, [orgId, id]),
        remove: () => m.query(`DELETE FROM skill WHERE org_id = $1 AND id = $2`, [orgId, id]),
      }),
    );
  }

  /**
   * The skills among `ids` that exist in the organization, in the order asked, as they are now,
   * without their instructions (ResolvedSkill). The skills tools ask this on every call, so
   * concurrent calls share one statement (Batcher); each is still read after it was asked.
   */
  async resolve(orgId: string, ids: readonly string[]): Promise<ResolvedSkill[]> {
    if (ids.length === 0) return [];
    return this.resolutions.submit({ orgId, ids });
  }

  /**
   * The same as `resolve`, by a statement of the caller's own rather than in the skills tools'
   * shared queue: for a page of versions, which may name every skill of the organization.
   */
  async resolveNow(orgId: string, ids: readonly string[]): Promise<ResolvedSkill[]> {
    if (ids.length === 0) return [];
    const known = this.known([{ orgId, ids }]);
    const rows: TextRow[] = await this.dataSource.query(`SELECT id, ${textColumns('id', '$3')} FROM skill WHERE org_id = $1 AND id = ANY($2::uuid[])`, [
      orgId,
      ids,
      [...known.ids],
    ]);
    const byId = new Map(rows.map((r) => [r.id, r]));
    return ids.flatMap((id) => {
      const r = byId.get(id);
      return r ? [this.resolved(orgId, r, known)] : [];
    });
  }

  /** One skill's instructions (load_skill), or undefined when the organization has no such skill. */
  async instructionsOf(orgId: string, id: string): Promise<string | undefined> {
    const [row]: { instructions: string }[] = await this.dataSource.query(`SELECT instructions FROM skill WHERE org_id = $1 AND id = $2`, [orgId, id]);
    return row?.instructions;
  }

  private readonly resolutions = new Batcher<{ orgId: string; ids: readonly string[] }, ResolvedSkill[]>((asks) => this.resolveMany(asks), {
    maxBatch: 32,
    maxInFlight: 2,
  });

  private async resolveMany(asks: { orgId: string; ids: readonly string[] }[]): Promise<ResolvedSkill[][]> {
    const ask: number[] = [];
    const orgs: string[] = [];
    const ids: string[] = [];
    asks.forEach((a, i) => {
      for (const id of a.ids) {
        ask.push(i);
        orgs.push(a.orgId);
        ids.push(id);
      }
    });
    const known = this.known(asks);
    const rows: (TextRow & { ask: number })[] = await this.dataSource.query(
      `SELECT DISTINCT q.ask, s.id, ${textColumns('s.id', '$4')}
         FROM unnest($1::integer[], $2::uuid[], $3::uuid[]) AS q(ask, org_id, id)
         JOIN skill s ON s.org_id = q.org_id AND s.id = q.id`,
      [ask, orgs, ids, [...known.ids]],
    );
    const found = asks.map(() => new Map<string, ResolvedSkill>());
    for (const r of rows) found[r.ask].set(r.id, this.resolved(asks[r.ask].orgId, r, known));
    return asks.map((a, i) =>
      a.ids.flatMap((id) => {
        const s = found[i].get(id);
        return s ? [s] : [];
      }),
    );
  }

  /** The texts this node keeps of the skills asked for, taken now (an eviction meanwhile changes nothing). */
  private known(asks: readonly { orgId: string; ids: readonly string[] }[]): { ids: Set<string>; texts: Map<string, SkillText> } {
    const known = { ids: new Set<string>(), texts: new Map<string, SkillText>() };
    for (const a of asks) {
      for (const id of a.ids) {
        const text = this.texts.get(`${a.orgId}/${id}`);
        if (text) {
          known.ids.add(id);
          known.texts.set(`${a.orgId}/${id}`, text);
        }
      }
    }
    return known;
  }

  /** A skill of a row, its texts as read or as kept; kept from now on when read. */
  private resolved(orgId: string, r: TextRow, known: { texts: Map<string, SkillText> }): ResolvedSkill {
    const key = `${orgId}/${r.id}`;
    let text = known.texts.get(key);
    if (!text || r.name !== null) {
      text = { name: r.name!, description: r.description! };
      this.texts.set(key, text);
    }
    return { id: r.id, name: text.name, description: text.description };
  }
}

function toSkill(r: SkillRow): SkillView {
  return { id: r.id, name: r.name, description: r.description, instructions: r.instructions, createdAt: new Date(r.created_at).toISOString() };
}

/** A skill's name and description, left out (NULL) for the ids in `known` (a parameter), whose texts the node keeps. */
function textColumns(id: string, known: string): string {
  return `CASE WHEN ${id} = ANY(${known}::uuid[]) THEN NULL ELSE name END AS name, CASE WHEN ${id} = ANY(${known}::uuid[]) THEN NULL ELSE description END AS description`;
}
