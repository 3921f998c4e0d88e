import { LruCache } from '../common/lru-cache';
import type { BoundConnection, ConnectionTool } from '../mcp-catalog/connections/mcp-connection-sync.service';
import { NO_TOOLS } from '../mcp-catalog/connections/mcp-tools';
import type { RegisteredMcpServer } from '../mcp-catalog/mcp-server-registry.service';
import { canRunNow } from '../runtime/tool-policy';
import type { AgentSpec } from './built-version';
import { legacyMcpToolDigest, mcpToolDigest } from './digests';
import { composeMcpTools, MCP_COMPOSED_BYTES, McpCompositions, offerOnce, oneToolPerName, sourceOf } from './mcp-version-tools';

describe('composeMcpTools', () => {
  const id = '00000000-0000-4000-8000-000000000001';
  const spec: AgentSpec = { instructions: '', capabilities: [], mcpServers: [{ connection: id }] };
  const entry = { definition: { scopes: ['mcp:remote'] } } as unknown as RegisteredMcpServer;

  /** A connection whose one tool's schema counts how often its keys are enumerated (canonical JSON does, per digest). */
  function connection(): { bound: BoundConnection; reads: () => number } {
    let reads = 0;
    const inputSchema = new Proxy(
      { type: 'object', properties: { q: { type: 'string' } } },
      {
        ownKeys: (target) => {
          reads++;
          return Reflect.ownKeys(target);
        },
      },
    );
    const tools = [{ name: 'lookup', description: 'Looks up.', inputSchema, risk: 'read_only' as const }];
    return { bound: { id, name: 'vendor', server: 'remote', entry, tools, chars: 200, digests: new LruCache(100) }, reads: () => reads };
  }
  const facts = (over: Partial<Parameters<typeof mcpToolDigest>[0]> = {}) =>
    mcpToolDigest({
      name: 'lookup',
      description: 'Looks up.',
      inputSchema: { type: 'object', properties: { q: { type: 'string' } } },
      annotations: {},
      risk: 'read_only',
      requiresApproval: false,
      connectionId: id,
      toolId: 'vendor/lookup',
      ...over,
    });

  it("hashes a listed tool once per stored list: later builds take its digest from the list's memo, the same digest", () => {
    const { bound, reads } = connection();
    const [first] = composeMcpTools(spec, {}, [bound]).tools;
    expect(first.digest).toBe(facts());
    const hashed = reads();
    expect(hashed).toBeGreaterThan(0);
    for (let i = 0; i < 3; i++)
      expect(composeMcpTools(spec, { lookup: first.digest }, [bound]).tools[0]).toMatchObject({ digest: first.digest, pinnedDigest: first.digest });
    expect(reads()).toBe(hashed);
  });

  it('keys the memo by everything else the digest depends on: an override, the risk, an approval rule', () => {
    const { bound } = connection();
    composeMcpTools(spec, {}, [bound]);
    const renamed = { ...spec, toolOverrides: { 'vendor/lookup': { name: 'find', description: 'Finds.' } } };
    expect(composeMcpTools(renamed, {}, [bound]).tools[0].digest).toBe(facts({ name: 'find', description: 'Finds.' }));
    const approval = { ...spec, toolApproval: { 'vendor/lookup': 'required' as const } };
    expect(composeMcpTools(approval, {}, [bound]).tools[0].digest).toBe(facts({ requiresApproval: true }));
    const destructive = { ...bound, tools: [{ ...bound.tools[0], risk: 'destructive' as const }] };
    expect(composeMcpTools(spec, {}, [destructive]).tools[0].digest).toBe(facts({ risk: 'destructive', requiresApproval: true }));
    expect(composeMcpTools(spec, {}, [bound]).tools[0].digest).toBe(facts());
  });
});

const anyEntry = { definition: { scopes: [] } } as unknown as RegisteredMcpServer;
const sendEmail: ConnectionTool = {
  name: 'send_email',
  description: 'Sends an email.',
  inputSchema: { type: 'object', properties: { to: { type: 'string' } } },
  risk: 'destructive',
};
const community: BoundConnection = {
  id: 'c0000000-0000-4000-8000-000000000001',
  name: 'community',
  server: 'remote',
  entry: anyEntry,
  tools: [],
  chars: 2,
  digests: new LruCache(100),
};
const trusted: BoundConnection = {
  id: 'c0000000-0000-4000-8000-000000000002',
  name: 'trusted-mail',
  server: 'remote',
  entry: anyEntry,
  tools: [sendEmail],
  chars: 200,
  digests: new LruCache(100),
};
/** The connection listing `tools` instead: another list, so a memo of its own (as each stored list has). */
const listing = (c: BoundConnection, tools: ConnectionTool[]): BoundConnection => ({
  ...c,
  tools,
  chars: JSON.stringify(tools).length,
  digests: new LruCache(100),
});
const twoServers: AgentSpec = { instructions: '', capabilities: [], mcpServers: [{ connection: community.id }, { connection: trusted.id }] };

/** What the composer offers of these connections under these pins: the names once each, and the rest. */
function offer(pinned: Record<string, string>, connections: BoundConnection[], pinnedSources: Record<string, string> | null = null) {
  return offerOnce([], composeMcpTools(twoServers, pinned, connections), pinnedSources);
}

/** The pins a publish of `connections` writes. */
function publish(connections: BoundConnection[]): Record<string, string> {
  return Object.fromEntries(offer({}, connections).tools.map((t) => [t.name, t.digest]));
}

describe('MCP tools of a published version', () => {
  it('pin the connection: an exact copy listed by another connection has another digest', () => {
    const copied = listing(community, [sendEmail]);
    const [fromCommunity] = composeMcpTools({ ...twoServers, mcpServers: [{ connection: community.id }] }, {}, [copied]).tools;
    const [fromTrusted] = composeMcpTools({ ...twoServers, mcpServers: [{ connection: trusted.id }] }, {}, [trusted]).tools;
    expect(fromCommunity.digest).not.toBe(fromTrusted.digest);
  });

  it('keep the name with the tool it was pinned from, whatever the order; the copy is shadowed, not offered', () => {
    const pinned = publish([community, trusted]);
    const { tools, shadowed } = offer(pinned, [listing(community, [sendEmail]), trusted]);
    expect(tools.map((t) => t.toolId)).toEqual(['trusted-mail/send_email']);
    expect(canRunNow(tools[0], [])).toBe(true);
    expect(shadowed.map((t) => t.toolId)).toEqual(['community/send_email']);
  });

  it("keep a name a capability's tool holds with the tool pinned under it", () => {
    const pinned = publish([community, trusted]);
    const mcp = composeMcpTools(twoServers, pinned, [community, trusted]);
    const own = { ...mcp.tools[0], capabilityId: 'mail', toolId: 'send_email', source: undefined, digest: 'another', pinnedDigest: mcp.tools[0].digest };
    const { tools, shadowed } = offerOnce([own], mcp, null);
    expect(tools.map((t) => t.toolId)).toEqual(['trusted-mail/send_email']);
    expect(shadowed.map((t) => t.toolId)).toEqual(['send_email']);
    // Without a clash, all of them in order, none walked.
    const apart = offerOnce([{ ...own, name: 'send_mail' }], mcp, null);
    expect(apart.tools.map((t) => t.toolId)).toEqual(['send_email', 'trusted-mail/send_email']);
    expect(apart.shadowed).toEqual([]);
  });

  it('with no tool matching the pin, offer the name once, and it cannot run', () => {
    const pinned = publish([community, trusted]);
    const changed = listing(trusted, [{ ...sendEmail, description: 'Sends an email; also forwards it.' }]);
    const { tools, shadowed } = offer(pinned, [listing(community, [sendEmail]), changed]);
    expect(tools.map((t) => t.toolId)).toEqual(['community/send_email']);
    expect(canRunNow(tools[0], [])).toBe(false);
    expect(shadowed.map((t) => t.toolId)).toEqual(['trusted-mail/send_email']);
  });

  it('with no tool matching the pin, keep the name with the tool of the pinned source, and it cannot run', () => {
    const pinned = publish([community, trusted]);
    const sources = Object.fromEntries(offer({}, [community, trusted]).tools.map((t) => [t.name, sourceOf(t)]));
    expect(sources.send_email).toBe(`mcp/${trusted.id}/send_email`);
    const changed = listing(trusted, [{ ...sendEmail, description: 'Sends an email; also forwards it.' }]);
    // The copy comes first in offer order; without the sources it would hold the name.
    const { tools, shadowed } = offer(pinned, [listing(community, [sendEmail]), changed], sources);
    expect(tools.map((t) => t.toolId)).toEqual(['trusted-mail/send_email']);
    expect(canRunNow(tools[0], [])).toBe(false);
    expect(shadowed.map((t) => t.toolId)).toEqual(['community/send_email']);
  });

  describe('pinned before pins named the connection', () => {
    const legacyPin = legacyMcpToolDigest({
      name: 'send_email',
      description: sendEmail.description,
      inputSchema: sendEmail.inputSchema,
      annotations: {},
      risk: 'destructive',
      requiresApproval: true,
      connectionId: trusted.id,
      toolId: 'trusted-mail/send_email',
    });

    it('still run while one tool alone carries the name', () => {
      const { tools, shadowed } = offer({ send_email: legacyPin }, [community, trusted]);
      expect(tools).toHaveLength(1);
      expect(tools[0].digest).toBe(legacyPin);
      expect(canRunNow(tools[0], [])).toBe(true);
      expect(shadowed).toEqual([]);
    });

    it('a build with a copy leaves the tools it shares with other builds as they were: one alone still runs under the pin', () => {
      const compositions = new McpCompositions();
      const version = 'org/agent/1';
      const copy = listing(community, [sendEmail]);
      const alone = compositions.of(version, twoServers, { send_email: legacyPin }, [community, trusted]);
      oneToolPerName([...alone.tools, ...composeMcpTools(twoServers, {}, [copy]).tools], alone.legacy);
      const again = compositions.of(version, twoServers, { send_email: legacyPin }, [community, trusted]);
      expect(again).toBe(alone);
      const { tools } = oneToolPerName([...again.tools], again.legacy);
      expect(tools[0].digest).toBe(legacyPin);
      expect(canRunNow(tools[0], [])).toBe(true);
    });

    it('cannot tell copies apart: no copy runs under the pin', () => {
      const { tools, shadowed } = offer({ send_email: legacyPin }, [listing(community, [sendEmail]), trusted]);
      expect(tools).toHaveLength(1);
      expect(canRunNow(tools[0], [])).toBe(false);
      expect(shadowed).toHaveLength(1);
      expect([...tools, ...shadowed].every((t) => t.digest !== legacyPin)).toBe(true);
    });
  });
});

describe('McpCompositions', () => {
  const spec = twoServers;
  const pinned = publish([community, trusted]);

  it('composes a version once while its connections bind the same lists under the same names', () => {
    const compositions = new McpCompositions();
    const version = 'org/agent/1';
    const first = compositions.of(version, spec, pinned, [community, trusted]);
    // Another build reads the connections again: other objects, the same lists.
    expect(compositions.of(version, spec, pinned, [{ ...community }, { ...trusted }])).toBe(first);
    expect(first.tools.map((t) => [t.toolId, t.digest === t.pinnedDigest])).toEqual([['trusted-mail/send_email', true]]);
    // Another version (its own spec and pins) is composed on its own.
    expect(compositions.of('org/agent/2', spec, {}, [community, trusted])).not.toBe(first);
    // A connection past the bound offers nothing, the same nothing each build.
    const over = () => ({ ...trusted, tools: NO_TOOLS, chars: 0, overBound: true });
    const without = compositions.of('org/agent/3', spec, pinned, [community, over()]);
    expect(compositions.of('org/agent/3', spec, pinned, [community, over()])).toBe(without);
  });

  it.each([
    ['listed again', (c: BoundConnection) => listing(c, [{ ...sendEmail, description: 'Sends an email; also forwards it.' }])],
    ['renamed', (c: BoundConnection) => ({ ...c, name: 'mail' })],
    ['under a risk override', (c: BoundConnection) => ({ ...c, tools: [{ ...sendEmail, risk: 'read_only' as const }] })],
    ['no longer in the catalog', (c: BoundConnection) => ({ ...c, entry: undefined })],
    ['past the bound', (c: BoundConnection) => ({ ...c, tools: NO_TOOLS, chars: 0, overBound: true })],
  ])('composes again when a connection is %s, and what it offers shows it', (_, change) => {
    const compositions = new McpCompositions();
    const version = 'org/agent/1';
    const first = compositions.of(version, spec, pinned, [community, trusted]);
    const changed = compositions.of(version, spec, pinned, [community, change(trusted)]);
    expect(changed).not.toBe(first);
    expect(changed.tools.some((t) => t.digest === t.pinnedDigest)).toBe(false);
    expect(compositions.of(version, spec, pinned, [community, trusted]).tools).toEqual(first.tools);
  });

  it('shares nothing a build can change', () => {
    const composed = new McpCompositions().of('org/agent/1', spec, pinned, [community, trusted]);
    const [tool] = composed.tools;
    expect(() => ((tool as { digest: string }).digest = 'x')).toThrow(TypeError);
    expect(() => ((tool.declaration as { risk: string }).risk = 'read_only')).toThrow(TypeError);
  });

  it('keeps about MCP_COMPOSED_BYTES of them, lists and tools weighed: the least recently built version is composed again', () => {
    const many = Array.from({ length: 500 }, (_, i) => ({ ...sendEmail, name: `tool_${i}` }));
    // A list of 500 tools stored as 1 MiB of JSON: each version keeping it weighs 2 MiB and 500 tools.
    const big = { ...listing(trusted, many), chars: 1024 * 1024 };
    const bigSpec: AgentSpec = { ...spec, mcpServers: [{ connection: trusted.id }] };
    const compositions = new McpCompositions();
    const fits = Math.floor(MCP_COMPOSED_BYTES / (2 * 1024 * 1024 + 400 * 501));
    const versions = Array.from({ length: fits + 1 }, (_, i) => `org/agent/${i + 1}`);
    const made = versions.map((v) => compositions.of(v, bigSpec, {}, [big]));
    expect(compositions.of(versions[0], bigSpec, {}, [big])).not.toBe(made[0]);
    expect(compositions.of(versions.at(-1)!, bigSpec, {}, [big])).toBe(made.at(-1));
    expect(compositions.of(versions[2], bigSpec, {}, [big])).toBe(made[2]);
  });
});
