import type { BoundConnection, ConnectionTool } from '../mcp-catalog/connections/mcp-connections.service';
import type { RegisteredMcpServer } from '../mcp-catalog/mcp-server-registry.service';
import { canRunNow } from '../runtime/tool-policy';
import type { AgentSpec } from './built-version';
import { legacyMcpToolDigest } from './digests';
import { composeMcpTools, oneToolPerName } from './mcp-version-tools';

const entry = { definition: { scopes: [] } } as unknown as RegisteredMcpServer;
const sendEmail: ConnectionTool = {
  name: 'send_email',
  description: 'Sends an email.',
  inputSchema: { type: 'object', properties: { to: { type: 'string' } } },
  risk: 'destructive',
};
const community: BoundConnection = { id: 'c0000000-0000-4000-8000-000000000001', name: 'community', server: 'remote', entry, tools: [] };
const trusted: BoundConnection = { id: 'c0000000-0000-4000-8000-000000000002', name: 'trusted-mail', server: 'remote', entry, tools: [sendEmail] };
const spec: AgentSpec = { instructions: '', capabilities: [], mcpServers: [{ connection: community.id }, { connection: trusted.id }] };

/** What the composer offers of these connections under these pins: the names once each, and the rest. */
function offer(pinned: Record<string, string>, connections: BoundConnection[]) {
  const mcp = composeMcpTools(spec, pinned, connections);
  return oneToolPerName(mcp.tools, mcp.legacy);
}

/** The pins a publish of `connections` writes. */
function publish(connections: BoundConnection[]): Record<string, string> {
  return Object.fromEntries(offer({}, connections).tools.map((t) => [t.name, t.digest]));
}

describe('MCP tools of a published version', () => {
  it('pin the connection: an exact copy listed by another connection has another digest', () => {
    const copied = { ...community, tools: [sendEmail] };
    const [fromCommunity] = composeMcpTools({ ...spec, mcpServers: [{ connection: community.id }] }, {}, [copied]).tools;
    const [fromTrusted] = composeMcpTools({ ...spec, mcpServers: [{ connection: trusted.id }] }, {}, [trusted]).tools;
    expect(fromCommunity.digest).not.toBe(fromTrusted.digest);
  });

  it('keep the name with the tool it was pinned from, whatever the order; the copy is shadowed, not offered', () => {
    const pinned = publish([community, trusted]);
    const { tools, shadowed } = offer(pinned, [{ ...community, tools: [sendEmail] }, trusted]);
    expect(tools.map((t) => t.toolId)).toEqual(['trusted-mail/send_email']);
    expect(canRunNow(tools[0], [])).toBe(true);
    expect(shadowed.map((t) => t.toolId)).toEqual(['community/send_email']);
  });

  it('with no tool matching the pin, offer the name once, and it cannot run', () => {
    const pinned = publish([community, trusted]);
    const changed = { ...trusted, tools: [{ ...sendEmail, description: 'Sends an email; also forwards it.' }] };
    const { tools, shadowed } = offer(pinned, [{ ...community, tools: [sendEmail] }, changed]);
    expect(tools.map((t) => t.toolId)).toEqual(['community/send_email']);
    expect(canRunNow(tools[0], [])).toBe(false);
    expect(shadowed.map((t) => t.toolId)).toEqual(['trusted-mail/send_email']);
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

    it('cannot tell copies apart: no copy runs under the pin', () => {
      const { tools, shadowed } = offer({ send_email: legacyPin }, [{ ...community, tools: [sendEmail] }, trusted]);
      expect(tools).toHaveLength(1);
      expect(canRunNow(tools[0], [])).toBe(false);
      expect(shadowed).toHaveLength(1);
      expect([...tools, ...shadowed].every((t) => t.digest !== legacyPin)).toBe(true);
    });
  });
});
