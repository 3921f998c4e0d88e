import { Injectable } from '@nestjs/common';
import type { ResolvedSkill } from '../capabilities/capability.types';
import { ApiError } from '../common/api-error';
import { LruCache } from '../common/lru-cache';
import type { AgentSpec } from './built-version';
import { PublishedVersionsRepository } from './published-versions.repository';
import type { ComposeMemo } from './version-composer.service';

export interface VersionRow {
  org_id: string;
  agent_id: string;
  version: number;
  spec: AgentSpec;
  spec_hash: string;
  tool_digests: Record<string, string>;
  /** Where each tool's calls went at publish (sourceOf); null for versions published before this was kept. */
  tool_sources: Record<string, string> | null;
  content_hash: string;
  published_at: Date;
  published_by: string;
}

export interface AgentIdentity {
  id: string;
  slug: string;
  name: string;
  latest_version: number | null;
}

/**
 * What never changes about a published version, kept per process so that the hot paths (every
 * tool call, every read of the offered tools) neither query nor recompute it: the version row (the
 * database refuses to change it), its agent's identity (agents are never renamed nor deleted), the
 * skills it binds (a skill cannot be edited, nor deleted while a version binds it), and what the
 * code derives from the spec alone: each capability's validated config and each tool's digest.
 * What can change is NOT here and is read on every build: which version `latest` is, the
 * organization's scopes, the knowledge collections' contents, and whatever a capability's build()
 * computes (it runs on every build, so a clock stays a clock).
 */
export interface FrozenVersion extends ComposeMemo {
  agent: { id: string; slug: string; name: string };
  row: VersionRow;
  skills?: readonly ResolvedSkill[];
}

/** Published versions kept per process; a miss costs one or two primary-key reads. */
export const FROZEN_VERSIONS_CACHED = 1000;
/**
 * What the cached versions may weigh together, about (UTF-16 bytes of their rows and skills). A
 * version is some kilobytes, but one can bind 200 skills with 2,000-character descriptions and
 * 100,000 characters of instructions: by count alone, a thousand of those were a gigabyte.
 */
export const FROZEN_VERSIONS_BYTES = 64 * 1024 * 1024;

/** About what a frozen version holds, in UTF-16 bytes (its configs and digests are small beside its row). */
export function frozenBytes(f: FrozenVersion): number {
  let chars = JSON.stringify(f.row).length;
  for (const s of f.skills ?? []) chars += s.id.length + s.name.length + s.description.length + 64;
  return 2 * chars + 1024;
}

/** Loads published versions (agent pointer, version row) and keeps what never changes about them. */
@Injectable()
export class VersionStore {
  private readonly frozen = new LruCache<string, FrozenVersion>(FROZEN_VERSIONS_CACHED, { max: FROZEN_VERSIONS_BYTES, of: frozenBytes });

  constructor(private readonly published: PublishedVersionsRepository) {}

  /**
   * The agent (in this organization, with its current pointer) and one of its versions; `latest`
   * follows the pointer. Always reads the agent; the version row comes from the cache when it can.
   */
  async load(orgId: string, agentId: string, version: number | 'latest'): Promise<{ agent: AgentIdentity; row: VersionRow }> {
    const agent = await this.agentRow(orgId, agentId);
    const frozen = await this.versionOf(orgId, agent, version === 'latest' ? agent.latest_version! : version);
    return { agent, row: frozen.row };
  }

  /**
   * Like `load`, for building: a numbered version already seen costs no query at all (nothing
   * deletes agents or versions, and a version cannot change). `latest` always reads the agent's
   * pointer, one primary-key read, so a publish on any node is seen by the next call on every node.
   * `preread`: the agent as this request already read it (with the key: AgentSnapshot); no
   * query then, and the same answers (404, 409) as reading it here.
   */
  async loadFrozen(orgId: string, agentId: string, version: number | 'latest', preread?: { agent: AgentIdentity | null }): Promise<FrozenVersion> {
    if (version !== 'latest') {
      const hit = this.cached(orgId, agentId, version);
      if (hit) return hit;
    }
    const agent = preread ? checked(preread.agent ?? undefined) : await this.agentRow(orgId, agentId);
    return this.versionOf(orgId, agent, version === 'latest' ? agent.latest_version! : version);
  }

  /** 404 not_found (no such agent in this organization), 409 not_published (no version yet). */
  private async agentRow(orgId: string, agentId: string): Promise<AgentIdentity> {
    return checked(await this.published.agent(orgId, agentId));
  }

  private async versionOf(orgId: string, agent: AgentIdentity, version: number): Promise<FrozenVersion> {
    const hit = this.cached(orgId, agent.id, version);
    if (hit) return hit;
    const row = await this.published.version(orgId, agent.id, version);
    if (!row) throw ApiError.notFound('agent version');
    return this.freeze(orgId, agent, row);
  }

  /** Keeps the skills `frozen` binds with it, weighed into the cache's bound when it is still cached. */
  rememberSkills(orgId: string, frozen: FrozenVersion, skills: readonly ResolvedSkill[]): void {
    frozen.skills = skills;
    const key = `${orgId}/${frozen.agent.id}/${frozen.row.version}`;
    if (this.frozen.get(key) === frozen) this.frozen.set(key, frozen);
  }

  /** Whether this node keeps the skills of a version (resolved once, when it was first built). */
  skillsKept(orgId: string, agentId: string, version: number): boolean {
    return this.cached(orgId, agentId, version)?.skills !== undefined;
  }

  /** A row already read (a list of versions): the cached version when there is one. */
  frozenOf(orgId: string, agent: AgentIdentity, row: VersionRow): FrozenVersion {
    return this.cached(orgId, agent.id, row.version) ?? this.freeze(orgId, agent, row);
  }

  private cached(orgId: string, agentId: string, version: number): FrozenVersion | undefined {
    return this.frozen.get(`${orgId}/${agentId}/${version}`);
  }

  /** Frozen for real: whatever a caller (or a capability) does with them, the next build sees what was published. */
  private freeze(orgId: string, agent: AgentIdentity, row: VersionRow): FrozenVersion {
    const frozen: FrozenVersion = {
      agent: Object.freeze({ id: agent.id, slug: agent.slug, name: agent.name }),
      row: deepFreeze({ ...row }),
      configs: new Map(),
      digests: new Map(),
    };
    this.frozen.set(`${orgId}/${agent.id}/${row.version}`, frozen);
    return frozen;
  }
}

function checked(agent: AgentIdentity | undefined): AgentIdentity {
  if (!agent) throw ApiError.notFound('agent');
  if (agent.latest_version === null) throw ApiError.conflict('The agent has no published version yet; publish it first.', 'not_published');
  return agent;
}

export function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const child of Object.values(value)) deepFreeze(child);
  }
  return value;
}
