import { Injectable } from '@nestjs/common';
import { McpServerEntry } from '../../mcp-server-entry.decorator';

/** Any Streamable HTTP MCP server, by URL: the escape hatch for a vendor not yet in the catalog. */
@McpServerEntry({
  id: 'remote',
  name: 'Remote MCP server',
  category: 'generic',
  description:
    'Any MCP server reachable over Streamable HTTP, by URL. Its tool annotations are not trusted: every tool is destructive (approval on every call) until an admin sets its risk.',
  transport: 'streamable-http',
  credentials: [
    { name: 'authorization', description: 'Sent as the Authorization header, verbatim (e.g. `Bearer <token>`).', required: false, header: 'Authorization' },
  ],
  scopes: ['mcp:remote'],
  trustAnnotations: false,
})
@Injectable()
export class RemoteEntry {}
