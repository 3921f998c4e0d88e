import { Injectable } from '@nestjs/common';
import { McpServerEntry } from '../../mcp-server-entry.decorator';

/** The protocol's reference server, run locally: tries the whole catalog path with no network. */
@McpServerEntry({
  id: 'everything',
  name: 'MCP reference server ("everything")',
  category: 'testing',
  description:
    'The Model Context Protocol reference server (@modelcontextprotocol/server-everything), run over stdio from the installed package: echo, sums, structured content, progress, images. For trying the catalog offline.',
  transport: 'stdio',
  credentials: [],
  scopes: [],
  // The package is a pinned dependency, reviewed like our own code: its annotations are believed.
  trustAnnotations: true,
  stdio: {
    package: '@modelcontextprotocol/server-everything',
    script: 'dist/index.js',
    args: ['stdio'],
    // Its `gzip-file-as-resource` fetches any http(s) URL it is given, from this host and outside
    // the egress policy (an empty list means "every domain"). `.invalid` never resolves (RFC 2606),
    // so it fetches nothing; data: URLs still work.
    env: { GZIP_ALLOWED_DOMAINS: 'invalid' },
  },
})
@Injectable()
export class EverythingEntry {}
