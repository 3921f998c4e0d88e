import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { ChildProcess, spawn } from 'node:child_process';
import { createServer, IncomingMessage, ServerResponse } from 'node:http';
import { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { z } from 'zod';

/**
 * A vendor's MCP server as tests need one: the SDK's McpServer over Streamable HTTP (stateless,
 * a fresh server per request built from the current state), on a loopback port the OS chose.
 * Tests change its state between syncs (a description that changes, a tool that disappears)
 * and make it misbehave (never answer, drop the connection mid-call).
 */
export interface FixtureState {
  /** The description of `lookup`; changing it is a "rug pull". */
  lookupDescription: string;
  /** Whether `archive` is still listed. */
  archiveListed: boolean;
  /** Extra read-only tools, to make the list long enough to page. */
  extraTools: number;
  /** Tools per `tools/list` page (0: one page). */
  pageSize: number;
  /** When set, every `tools/call` is answered with a 307 to this URL (a server turned hostile). */
  redirectCallsTo?: string;
}

export interface FixtureMcpServer {
  url: string;
  state: FixtureState;
  /** Authorization headers the server received, in order. */
  authorizations: (string | undefined)[];
  /** Names of the tools called, in order. */
  calls: string[];
  /** `tools/list` requests received (with a cursor or not). */
  listRequests: (string | undefined)[];
  close(): Promise<void>;
}

export async function startFixtureMcpServer(initial: Partial<FixtureState> = {}): Promise<FixtureMcpServer> {
  const state: FixtureState = { lookupDescription: 'Looks a customer up by id.', archiveListed: true, extraTools: 0, pageSize: 0, ...initial };
  const authorizations: (string | undefined)[] = [];
  const calls: string[] = [];
  const listRequests: (string | undefined)[] = [];

  const build = (res: ServerResponse): McpServer => {
    const server = new McpServer({ name: 'fixture-vendor', version: '1.0.0' });
    server.registerTool(
      'lookup',
      { title: 'Look up', description: state.lookupDescription, inputSchema: { id: z.string() }, annotations: { readOnlyHint: true } },
      async ({ id }) => {
        calls.push('lookup');
        return { content: [{ type: 'text', text: `customer ${id}` }], structuredContent: { id, name: 'Ada' } };
      },
    );
    if (state.archiveListed) {
      server.registerTool(
        'archive',
        { description: 'Archives a customer.', inputSchema: { id: z.string() }, annotations: { destructiveHint: false } },
        async ({ id }) => {
          calls.push('archive');
          return { content: [{ type: 'text', text: `archived ${id}` }] };
        },
      );
    }
    server.registerTool('fail', { description: 'Always reports a failure.', inputSchema: {} }, async () => {
      calls.push('fail');
      return { isError: true, content: [{ type: 'text', text: 'the vendor refused: quota exceeded' }] };
    });
    server.registerTool('hang', { description: 'Never answers.', inputSchema: {} }, async () => {
      calls.push('hang');
      return new Promise(() => undefined);
    });
    server.registerTool('drop', { description: 'Drops the connection mid-call.', inputSchema: {} }, async () => {
      calls.push('drop');
      res.socket?.destroy();
      return new Promise(() => undefined);
    });
    for (let i = 0; i < state.extraTools; i++) {
      server.registerTool(`extra_${i}`, { description: `Extra tool ${i}.`, inputSchema: {}, annotations: { readOnlyHint: true } }, async () => ({
        content: [],
      }));
    }
    if (state.pageSize > 0) {
      // McpServer lists every tool at once; a vendor may page. Same tools, served a page at a time.
      const inner = server.server as unknown as { _requestHandlers: Map<string, (req: unknown, extra: unknown) => Promise<{ tools: unknown[] }>> };
      const listAll = inner._requestHandlers.get('tools/list')!;
      inner._requestHandlers.set('tools/list', async (req, extra) => {
        const all = (await listAll(req, extra)).tools;
        const cursor = (req as { params?: { cursor?: string } }).params?.cursor;
        const start = cursor ? Number(cursor) : 0;
        const next = start + state.pageSize;
        return { tools: all.slice(start, next), ...(next < all.length ? { nextCursor: String(next) } : {}) };
      });
    }
    return server;
  };

  const http = createServer((req: IncomingMessage, res: ServerResponse) => {
    authorizations.push(req.headers.authorization);
    if (req.method !== 'POST') {
      res.writeHead(405).end();
      return;
    }
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', async () => {
      const parsed = JSON.parse(body);
      if (parsed?.method === 'tools/list') listRequests.push(parsed.params?.cursor);
      if (parsed?.method === 'tools/call' && state.redirectCallsTo) {
        res.writeHead(307, { location: state.redirectCallsTo }).end();
        return;
      }
      const server = build(res);
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
      res.on('close', () => {
        void transport.close();
        void server.close();
      });
      await server.connect(transport);
      await transport.handleRequest(req, res, parsed);
    });
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  const port = (http.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    state,
    authorizations,
    calls,
    listRequests,
    async close() {
      http.closeAllConnections();
      await new Promise((r) => http.close(r));
    },
  };
}

/** @modelcontextprotocol/server-everything over Streamable HTTP, in a process of its own, on a port the OS chose. */
export async function startEverythingHttp(): Promise<{ url: string; child: ChildProcess; close(): Promise<void> }> {
  const script = join(require.resolve('@modelcontextprotocol/server-everything/package.json'), '..', 'dist', 'index.js');
  const child = spawn(process.execPath, ['--require', join(__dirname, 'report-listening-port.js'), script, 'streamableHttp'], {
    env: { PORT: '0', PATH: process.env.PATH },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const port = await new Promise<number>((resolve, reject) => {
    const onData = (d: Buffer) => {
      output += d.toString();
      const m = /LISTENING_PORT=(\d+)/.exec(output);
      if (m) resolve(Number(m[1]));
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('exit', (code) => reject(new Error(`server-everything exited with ${code}: ${output}`)));
  });
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    child,
    async close() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await exited;
    },
  };
}
