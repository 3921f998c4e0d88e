import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createServer, IncomingMessage, ServerResponse } from 'node:http';
import { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
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
  /**
   * When set, a request without exactly this Authorization header is answered 401, with a body
   * that echoes the header it got (careless vendors do): nothing of it may reach our logs.
   */
  requireAuthorization?: string;
  /** Also list `count_slowly` (progress), `announce_change` (tools/list_changed) and `render` (an image and an embedded resource). */
  richTools?: boolean;
  /** Also list `whoami`, which answers with the Authorization header it got (a debugging server's echo) in text, structuredContent and a resource. */
  echoAuthorization?: boolean;
  /** Also list `whereami`, which answers with the URL it was called at, query included (a debugging server's echo). */
  echoRequestUrl?: boolean;
  /**
   * When set, `tools/list` is answered with what it returns (a JSON-RPC `result` or `error`), given
   * the Authorization header: a list no SDK server would send (an echoed header, a cut emoji, U+0000).
   */
  rawToolsList?: (authorization: string | undefined) => { result: unknown } | { error: { code: number; message: string } };
  /** When set, `tools/list` is answered this many ms late (a slow server, listed while something else happens). */
  listDelayMs?: number;
  /** Raw answers (rawToolsList, rawToolsCall) sent as an event stream (CR LF lines, an `id:` of brackets) instead of JSON. */
  rawAsEventStream?: boolean;
  /** Like rawToolsList, for `tools/call` of the named tool (others are answered by the SDK's server). */
  rawToolsCall?: (name: string, authorization: string | undefined) => { result: unknown } | { error: { code: number; message: string } } | undefined;
}

export interface FixtureMcpServer {
  url: string;
  state: FixtureState;
  /** Authorization headers the server received, in order. */
  authorizations: (string | undefined)[];
  /** The path and query of every request received, in order. */
  requestUrls: string[];
  /** `traceparent` headers the server received, in order. */
  traceparents: (string | undefined)[];
  /** Names of the tools called, in order. */
  calls: string[];
  /** `tools/list` requests received (with a cursor or not). */
  listRequests: (string | undefined)[];
  /** Per finished `count_slowly` call, how many progress notifications it sent (0: no progress token was asked for). */
  progressSent: number[];
  close(): Promise<void>;
}

export async function startFixtureMcpServer(initial: Partial<FixtureState> = {}): Promise<FixtureMcpServer> {
  const state: FixtureState = { lookupDescription: 'Looks a customer up by id.', archiveListed: true, extraTools: 0, pageSize: 0, ...initial };
  const authorizations: (string | undefined)[] = [];
  const requestUrls: string[] = [];
  const traceparents: (string | undefined)[] = [];
  const calls: string[] = [];
  const listRequests: (string | undefined)[] = [];
  const progressSent: number[] = [];

  /** `hungUp`: aborted when the response to the request that carries the call closes. */
  const registerRichTools = (server: McpServer, hungUp: AbortSignal): void => {
    server.registerTool(
      'count_slowly',
      {
        description: 'Counts to `steps`, reporting progress after each step.',
        inputSchema: { steps: z.number().int().min(1).max(100), stepMs: z.number().int().min(0).max(10_000) },
        annotations: { readOnlyHint: true },
      },
      async ({ steps, stepMs }, extra) => {
        calls.push('count_slowly');
        const token = extra._meta?.progressToken;
        for (let i = 1; i <= steps; i++) {
          await sleep(stepMs, undefined, { signal: hungUp }).catch(() => undefined);
          // Nobody is listening any more (close() hangs up on every call): counting on would
          // outlive the test, and keep its worker from exiting.
          if (hungUp.aborted) return { isError: true, content: [] };
          if (token !== undefined) {
            await extra.sendNotification({
              method: 'notifications/progress',
              params: { progressToken: token, progress: i, total: steps, message: `step ${i}` },
            });
          }
        }
        progressSent.push(token === undefined ? 0 : steps);
        return { content: [{ type: 'text', text: `counted to ${steps}` }] };
      },
    );
    server.registerTool(
      'announce_change',
      { description: 'Says, in its answer, that the tool list changed (what a vendor does after an update).', inputSchema: {} },
      async (_args, extra) => {
        calls.push('announce_change');
        await extra.sendNotification({ method: 'notifications/tools/list_changed' });
        return { content: [{ type: 'text', text: 'announced' }] };
      },
    );
    server.registerTool(
      'render',
      {
        description: 'Answers with an image and an embedded resource of the given sizes (bytes of base64 / characters).',
        inputSchema: { imageBytes: z.number().int().min(0).max(2_000_000), resourceChars: z.number().int().min(0).max(2_000_000) },
        annotations: { readOnlyHint: true },
      },
      async ({ imageBytes, resourceChars }) => {
        calls.push('render');
        return {
          content: [
            { type: 'text', text: 'rendered' },
            // Random, like real image bytes and prose: a repeated letter would tokenize unrealistically well.
            {
              type: 'image',
              data: randomBytes(Math.ceil(imageBytes * 0.75))
                .toString('base64')
                .slice(0, imageBytes),
              mimeType: 'image/png',
            },
            {
              type: 'resource',
              resource: {
                uri: 'file:///report.txt',
                mimeType: 'text/plain',
                text: randomBytes(Math.ceil(resourceChars / 2))
                  .toString('hex')
                  .slice(0, resourceChars),
              },
            },
          ],
        };
      },
    );
  };

  const build = (res: ServerResponse): McpServer => {
    const server = new McpServer({ name: 'fixture-vendor', version: '1.0.0' });
    const hungUp = new AbortController();
    res.on('close', () => hungUp.abort());
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
    if (state.richTools) registerRichTools(server, hungUp.signal);
    if (state.echoAuthorization) {
      server.registerTool('whoami', { description: 'Shows the credential it was called with.', inputSchema: {} }, async () => {
        calls.push('whoami');
        const got = res.req.headers.authorization ?? 'none';
        return {
          content: [
            { type: 'text', text: `you sent ${got}` },
            { type: 'resource', resource: { uri: 'file:///request.txt', mimeType: 'text/plain', text: `authorization: ${got}` } },
          ],
          structuredContent: { headers: { authorization: got }, [got]: true },
        };
      });
    }
    if (state.echoRequestUrl) {
      server.registerTool('whereami', { description: 'Shows the URL it was called at.', inputSchema: {} }, async () => {
        calls.push('whereami');
        return { content: [{ type: 'text', text: `you called ${res.req.url}` }], structuredContent: { url: res.req.url } };
      });
    }
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
    requestUrls.push(req.url ?? '');
    traceparents.push(req.headers.traceparent as string | undefined);
    if (state.requireAuthorization !== undefined && req.headers.authorization !== state.requireAuthorization) {
      res.writeHead(401, { 'content-type': 'application/json' }).end(JSON.stringify({ error: `invalid credentials: ${req.headers.authorization ?? 'none'}` }));
      return;
    }
    if (req.method !== 'POST') {
      res.writeHead(405).end();
      return;
    }
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', async () => {
      const parsed = JSON.parse(body);
      if (parsed?.method === 'tools/list') listRequests.push(parsed.params?.cursor);
      if (parsed?.method === 'tools/list' && state.listDelayMs) await sleep(state.listDelayMs);
      const answerRaw = (answer: object) => {
        const text = JSON.stringify({ jsonrpc: '2.0', id: parsed.id, ...answer });
        if (!state.rawAsEventStream) return res.writeHead(200, { 'content-type': 'application/json' }).end(text);
        res.writeHead(200, { 'content-type': 'text/event-stream' }).end(`: [[[[ a comment\r\nid: [[[[{{{{\r\nevent: message\r\ndata: ${text}\r\n\r\n`);
      };
      if (parsed?.method === 'tools/list' && state.rawToolsList) {
        answerRaw(state.rawToolsList(req.headers.authorization));
        return;
      }
      const raw = parsed?.method === 'tools/call' ? state.rawToolsCall?.(parsed.params?.name, req.headers.authorization) : undefined;
      if (raw) {
        calls.push(parsed.params?.name);
        answerRaw(raw);
        return;
      }
      if (parsed?.method === 'tools/call' && state.redirectCallsTo) {
        res.writeHead(307, { location: state.redirectCallsTo }).end();
        return;
      }
      const server = build(res);
      // Notifications during a call (progress, list_changed) travel on the call's own event stream.
      const streamed = parsed?.method === 'tools/call' && ['count_slowly', 'announce_change'].includes(parsed.params?.name);
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: !streamed });
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
    requestUrls,
    traceparents,
    calls,
    listRequests,
    progressSent,
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
