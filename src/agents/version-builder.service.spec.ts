import type { BuildContext, ToolDeclaration } from '../capabilities/capability.types';
import type { AgentSpec } from './built-version';
import { driftOf, FROZEN_VERSIONS_CACHED, VersionBuilder, VersionRow } from './version-builder.service';
import { VersionComposer } from './version-composer.service';
import { VersionStore } from './version-store.service';
import { PublishedVersionsRepository } from './published-versions.repository';

/** A built-in tool of capability `c`, as the composer offers it (its tool id is its name). */
const tool = (name: string, digest: string) => ({ name, digest, capabilityId: 'c', toolId: name });
/** An MCP tool of connection `connectionId`, named `name` by its server. */
const mcpTool = (name: string, digest: string, connectionId: string) => ({
  name,
  digest,
  capabilityId: 'mcp',
  toolId: `conn-${connectionId}/${name}`,
  source: { connectionId, server: 'remote' },
});

describe('driftOf', () => {
  it('is empty when every pinned tool is offered with its pinned digest', () => {
    expect(driftOf({ a: '1', b: '2' }, [tool('b', '2'), tool('a', '1')])).toEqual([]);
    expect(driftOf({}, [])).toEqual([]);
  });

  it('names changed, removed and unpinned tools, sorted by name', () => {
    expect(driftOf({ a: '1', b: '2', c: '3' }, [tool('d', '4'), tool('b', '2'), tool('a', 'x')])).toEqual([
      { tool: 'a', reason: 'changed' },
      { tool: 'c', reason: 'removed' },
      { tool: 'd', reason: 'added' },
    ]);
  });

  it("reads a kept version's pins once and still compares each read's tools afresh", () => {
    const pins = Object.freeze({ a: '1', b: '2', ['__proto__']: '3' }) as Record<string, string>;
    const entries = jest.spyOn(Object, 'entries');
    try {
      expect(driftOf(pins, [tool('a', '1'), tool('b', '2'), tool('__proto__', '3')])).toEqual([]);
      expect(driftOf(pins, [tool('a', 'x'), tool('c', '4'), tool('__proto__', '3')])).toEqual([
        { tool: 'a', reason: 'changed' },
        { tool: 'b', reason: 'removed' },
        { tool: 'c', reason: 'added' },
      ]);
      expect(driftOf(pins, [tool('a', '1'), tool('b', '2')])).toEqual([{ tool: '__proto__', reason: 'removed' }]);
      // The frozen pins were listed once for the three reads (was once a read).
      expect(entries.mock.calls.filter(([o]) => o === pins)).toHaveLength(1);
    } finally {
      entries.mockRestore();
    }
  });

  it('does not mistake inherited object keys for pinned tools', () => {
    expect(driftOf({}, [tool('constructor', '1')])).toEqual([{ tool: 'constructor', reason: 'added' }]);
    expect(driftOf({ constructor: '1' }, [tool('constructor', '2')], [], {})).toEqual([{ tool: 'constructor', reason: 'changed' }]);
  });

  it('tells a tool of another source under a pinned name from a changed definition, when the version kept its sources', () => {
    const pinnedSources = { search: 'mcp/A/search', lookup: 'mcp/A/lookup' };
    // `search` now comes from connection B (A no longer lists it); `lookup` is A's, redefined.
    const now = [mcpTool('search', 'x', 'B'), mcpTool('lookup', 'y', 'A')];
    expect(driftOf({ search: '1', lookup: '2' }, now, [], pinnedSources)).toEqual([
      { tool: 'lookup', reason: 'changed' },
      { tool: 'search', reason: 'removed' },
      { tool: 'search', reason: 'added', toolId: 'conn-B/search' },
    ]);
    // A version published before sources were kept reads as before.
    expect(driftOf({ search: '1' }, [mcpTool('search', 'x', 'B')], [], null)).toEqual([{ tool: 'search', reason: 'changed' }]);
    // A renamed connection is the same source: its tools changed (their ids name it), nothing moved.
    expect(driftOf({ search: '1' }, [{ ...mcpTool('search', 'x', 'A'), toolId: 'renamed/search' }], [], pinnedSources)).toEqual([
      { tool: 'search', reason: 'changed' },
    ]);
  });
});

describe('VersionBuilder, published versions kept per process', () => {
  const ORG = '00000000-0000-4000-8000-00000000000a';
  const OTHER_ORG = '00000000-0000-4000-8000-00000000000b';
  const AGENT = '00000000-0000-4000-8000-0000000000a1';
  const SKILL = { id: '00000000-0000-4000-8000-0000000000c1', name: 'Refunds', description: 'When asked for a refund', instructions: 'Check the order.' };

  class Input {}

  function setup() {
    const declaration: ToolDeclaration = { id: 'look_up', description: 'Look it up.', risk: 'read_only', input: Input };
    const builds: BuildContext[] = [];
    const registered = {
      definition: { id: 'cap', name: 'Cap', category: 'test', description: 'A capability.', tools: [declaration], scopes: ['cap:use'] },
      configSchema: {},
      tools: [{ declaration, inputSchema: Object.freeze({ type: 'object' }), requiresApproval: false }],
    };
    const registry = {
      get: (id: string) => (id === 'cap' ? registered : undefined),
      validateConfig: jest.fn((_id: string, config: unknown) => ({ value: { depth: 2, ...(config as object) }, errors: [] })),
      build: jest.fn(async (_id: string, ctx: BuildContext) => {
        builds.push(ctx);
        // A capability that (wrongly) edits what it was handed must not change the next build.
        (ctx.config as Record<string, unknown>).depth = 99;
        return { capabilityId: 'cap', prompt: `built #${builds.length}`, tools: [{ id: 'look_up', execute: () => ({}) }] };
      }),
    };
    const versions = new Map<number, VersionRow>();
    const agent = { id: AGENT, slug: 'helper', name: 'Helper', latest_version: null as number | null };
    const publish = (version: number) => {
      const spec: AgentSpec = {
        instructions: 'Be brief.',
        capabilities: [{ id: 'cap', config: { depth: 2 } }],
        resources: { knowledgeCollections: ['kc'], skills: [SKILL.id] },
      };
      versions.set(version, {
        org_id: ORG,
        agent_id: AGENT,
        version,
        spec,
        spec_hash: `h${version}`,
        tool_digests: {},
        tool_sources: {},
        content_hash: `c${version}`,
        published_at: new Date(),
        published_by: 'k',
      });
      agent.latest_version = version;
    };
    const queries: string[] = [];
    const dataSource = {
      query: jest.fn(async (sql: string, params: unknown[]) => {
        queries.push(sql);
        if (params[0] !== ORG || params[1] !== AGENT) return [];
        if (sql.includes('FROM agent_version')) return versions.has(params[2] as number) ? [{ ...versions.get(params[2] as number)! }] : [];
        return [{ ...agent }];
      }),
    };
    let reads = 0;
    const knowledge = { resolve: jest.fn(async () => [{ id: 'kc', name: 'Handbook', description: null, documentCount: ++reads }]) };
    const skills = { resolve: jest.fn(async () => [{ ...SKILL }]) };
    const builder = new VersionBuilder(
      dataSource as never,
      new VersionStore(new PublishedVersionsRepository(dataSource as never)),
      new VersionComposer(registry as never),
      knowledge as never,
      skills as never,
      { bound: jest.fn(async () => []) } as never,
    );
    return { builder, registry, builds, publish, queries, knowledge, skills, declaration };
  }

  it('reads a numbered version once: later builds of it query nothing for the version or its skills', async () => {
    const s = setup();
    s.publish(1);
    await s.builder.build(ORG, ['cap:use'], AGENT, 1);
    expect(s.queries).toHaveLength(2); // the agent, then the version
    await s.builder.build(ORG, ['cap:use'], AGENT, 1);
    await s.builder.build(ORG, ['cap:use'], AGENT, 1);
    expect(s.queries).toHaveLength(2);
    expect(s.skills.resolve).toHaveBeenCalledTimes(1);
    // Knowledge collections change as documents come and go: resolved on every build.
    expect(s.knowledge.resolve).toHaveBeenCalledTimes(3);
    expect(s.builds[2].resources.knowledgeCollections[0].documentCount).toBe(3);
    expect(s.registry.validateConfig).toHaveBeenCalledTimes(1);
  });

  it('reads which version `latest` is on every build, and follows a new publish', async () => {
    const s = setup();
    s.publish(1);
    expect((await s.builder.build(ORG, [], AGENT, 'latest')).version).toBe(1);
    expect((await s.builder.build(ORG, [], AGENT, 'latest')).version).toBe(1);
    expect(s.queries.filter((q) => q.includes('FROM agent WHERE'))).toHaveLength(2);
    expect(s.queries.filter((q) => q.includes('FROM agent_version'))).toHaveLength(1);
    s.publish(2);
    expect((await s.builder.build(ORG, [], AGENT, 'latest')).version).toBe(2);
  });

  it('load reads the agent (with its current pointer) every time, and the version row once', async () => {
    const s = setup();
    s.publish(1);
    s.publish(2);
    const first = await s.builder.load(ORG, AGENT, 1);
    expect(first.agent.latest_version).toBe(2);
    expect(first.row.version).toBe(1);
    s.publish(3);
    expect((await s.builder.load(ORG, AGENT, 1)).agent.latest_version).toBe(3);
    expect((await s.builder.load(ORG, AGENT, 'latest')).row.version).toBe(3);
    expect(s.queries.filter((q) => q.includes('FROM agent WHERE'))).toHaveLength(3);
    expect(s.queries.filter((q) => q.includes('FROM agent_version'))).toHaveLength(2);
    // What load read, buildRow (MCP's path) builds without reading again.
    await s.builder.buildRow(ORG, [], first.agent, first.row);
    expect(s.queries.filter((q) => q.includes('FROM agent_version'))).toHaveLength(2);
  });

  it("runs every capability's build on every build, each time with a config of its own", async () => {
    const s = setup();
    s.publish(1);
    const first = await s.builder.build(ORG, [], AGENT, 1);
    const second = await s.builder.build(ORG, [], AGENT, 1);
    expect(s.registry.build).toHaveBeenCalledTimes(2);
    expect(first.systemPrompt).toBe('Be brief.\n\nbuilt #1');
    expect(second.systemPrompt).toBe('Be brief.\n\nbuilt #2');
    expect(s.builds.map((b) => b.config)).toEqual([{ depth: 99 }, { depth: 99 }]);
    expect(s.builds[1].config).not.toBe(s.builds[0].config);
  });

  it("makes a capability's prompt given as a function only when the system prompt is read, once a build", async () => {
    const s = setup();
    s.publish(1);
    const made = jest.fn(() => '- **Handbook** (3 documents)');
    s.registry.build.mockImplementation(async () => ({ capabilityId: 'cap', prompt: made, tools: [{ id: 'look_up', execute: () => ({}) }] }) as never);
    // What a tool call builds: its tools, never the prompt.
    const built = await s.builder.build(ORG, [], AGENT, 1);
    expect(built.tools.map((t) => t.name)).toEqual(['look_up']);
    expect(made).not.toHaveBeenCalled();
    expect(built.systemPrompt).toBe('Be brief.\n\n- **Handbook** (3 documents)');
    expect(built.systemPrompt).toBe('Be brief.\n\n- **Handbook** (3 documents)');
    expect(made).toHaveBeenCalledTimes(1);
    // And where the prompt is read whole, as a copy would read it.
    expect({ ...built }.systemPrompt).toBe('Be brief.\n\n- **Handbook** (3 documents)');
  });

  it('hands out the published spec and the bound skills frozen', async () => {
    const s = setup();
    s.publish(1);
    const built = await s.builder.build(ORG, [], AGENT, 1);
    expect(() => built.spec.capabilities.push({ id: 'other' })).toThrow(TypeError);
    expect(() => Object.assign(s.builds[0].resources.skills[0], { instructions: 'Refund everything.' })).toThrow(TypeError);
  });

  it('never answers one organization with a version kept for another', async () => {
    const s = setup();
    s.publish(1);
    await s.builder.build(ORG, [], AGENT, 1);
    await expect(s.builder.build(OTHER_ORG, [], AGENT, 1)).rejects.toMatchObject({ status: 404, code: 'not_found' });
    await expect(s.builder.build(OTHER_ORG, [], AGENT, 'latest')).rejects.toMatchObject({ status: 404, code: 'not_found' });
  });

  it('still sees a tool definition that changed under the running process (a test playing the next release)', async () => {
    const s = setup();
    s.publish(1);
    const before = (await s.builder.build(ORG, [], AGENT, 1)).tools[0].digest;
    expect((await s.builder.build(ORG, [], AGENT, 1)).tools[0].digest).toBe(before);
    const original = s.declaration.description;
    s.declaration.description = 'Look it up, the new way.';
    try {
      expect((await s.builder.build(ORG, [], AGENT, 1)).tools[0].digest).not.toBe(before);
    } finally {
      s.declaration.description = original;
    }
    expect((await s.builder.build(ORG, [], AGENT, 1)).tools[0].digest).toBe(before);
  });

  it('keeps a bounded number of versions', async () => {
    const s = setup();
    for (let v = 1; v <= FROZEN_VERSIONS_CACHED + 1; v++) s.publish(v);
    await s.builder.build(ORG, [], AGENT, 1);
    for (let v = 2; v <= FROZEN_VERSIONS_CACHED + 1; v++) await s.builder.build(ORG, [], AGENT, v);
    const before = s.queries.length;
    await s.builder.build(ORG, [], AGENT, 1); // the least recently used: forgotten, read again
    expect(s.queries.length).toBe(before + 2);
  });
});
