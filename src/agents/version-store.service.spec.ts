import type { ResolvedSkill } from '../capabilities/capability.types';
import type { PublishedVersionsRepository } from './published-versions.repository';
import { FROZEN_VERSIONS_BYTES, frozenBytes, VersionRow, VersionStore } from './version-store.service';

describe('VersionStore: the cache of published versions', () => {
  const org = 'org';
  const agent = { id: 'agent', slug: 'a', name: 'A', latest_version: 1000 };
  /** Versions whose instructions are `chars` long, counting the reads of version rows. */
  function storeOf(chars: number) {
    const reads: number[] = [];
    const repo = {
      agent: () => Promise.resolve(agent),
      version: (_o: string, _a: string, version: number): Promise<VersionRow> => {
        reads.push(version);
        return Promise.resolve({
          org_id: org,
          agent_id: agent.id,
          version,
          spec: { instructions: 'x'.repeat(chars), capabilities: [] },
          spec_hash: 'h',
          tool_digests: {},
          tool_sources: null,
          content_hash: 'c',
          published_at: new Date(0),
          published_by: 'p',
        });
      },
    } as unknown as PublishedVersionsRepository;
    return { store: new VersionStore(repo), reads };
  }

  it('keeps a thousand small versions without reading any again', async () => {
    const { store, reads } = storeOf(1_000);
    for (let v = 1; v <= 1000; v++) await store.loadFrozen(org, agent.id, v);
    for (let v = 1; v <= 1000; v++) await store.loadFrozen(org, agent.id, v);
    expect(reads).toHaveLength(1000);
  });

  it('keeps large versions only up to what they may weigh together, the least recently used going first', async () => {
    // 100,000 characters of instructions: 200 KB a version, so about 320 of them fill the bound.
    const { store, reads } = storeOf(100_000);
    for (let v = 1; v <= 1000; v++) await store.loadFrozen(org, agent.id, v);
    const kept = Math.floor(FROZEN_VERSIONS_BYTES / frozenBytes({ ...(await store.loadFrozen(org, agent.id, 1000)) }));
    expect(kept).toBeGreaterThan(200);
    expect(kept).toBeLessThan(400);
    reads.length = 0;
    for (let v = 1000; v > 1000 - kept + 1; v--) await store.loadFrozen(org, agent.id, v);
    expect(reads).toEqual([]);
    await store.loadFrozen(org, agent.id, 1);
    expect(reads).toEqual([1]);
  });

  it('weighs the skills a version binds once they are remembered with it', async () => {
    const { store, reads } = storeOf(10);
    const skills: ResolvedSkill[] = Array.from({ length: 200 }, (_, i) => ({ id: `s${i}`, name: `skill ${i}`, description: 'd'.repeat(2_000) }));
    const bare = frozenBytes(await store.loadFrozen(org, agent.id, 1));
    // 200 skills with the longest descriptions: about 0.8 MB a version, so at most about 80 fit.
    for (let v = 1; v <= 200; v++) store.rememberSkills(org, await store.loadFrozen(org, agent.id, v), skills);
    const frozen = await store.loadFrozen(org, agent.id, 200);
    expect(frozenBytes(frozen)).toBeGreaterThan(bare + 800_000);
    reads.length = 0;
    await store.loadFrozen(org, agent.id, 2);
    expect(reads).toEqual([2]);
  });
});
