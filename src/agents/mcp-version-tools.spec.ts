import { LruCache } from '../common/lru-cache';
import type { BoundConnection } from '../mcp-catalog/connections/mcp-connections.service';
import type { RegisteredMcpServer } from '../mcp-catalog/mcp-server-registry.service';
import type { AgentSpec } from './built-version';
import { mcpToolDigest } from './digests';
import { composeMcpTools } from './mcp-version-tools';

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
    return { bound: { id, name: 'vendor', server: 'remote', entry, tools, digests: new LruCache(100) }, reads: () => reads };
  }
  const facts = (over: Partial<Parameters<typeof mcpToolDigest>[0]> = {}) =>
    mcpToolDigest({
      name: 'lookup',
      description: 'Looks up.',
      inputSchema: { type: 'object', properties: { q: { type: 'string' } } },
      annotations: {},
      risk: 'read_only',
      requiresApproval: false,
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
