import { createServer, IncomingMessage, Server, ServerResponse } from 'node:http';
import { AddressInfo } from 'node:net';

const NOTICE = { jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: 'x' } };
/** One log notification as an event of a stream. */
export const NOTICE_LINE = `data: ${JSON.stringify(NOTICE)}\n\n`;

export interface Stream {
  method: string;
  /** Notifications written into it so far. */
  written: number;
  /** Whether the server side of the stream's socket has closed. */
  ended: boolean;
}

/**
 * A Streamable HTTP MCP server written on the wire. `tools/call` by name: `flood` answers an event
 * stream of log notifications, 64 KiB at a time for as long as the socket takes them, and never the
 * answer; `burst` writes `params.arguments.count` of them at once, then the answer; anything else
 * is answered at once (`tools/list` lists the three). With `floodEvents`, the session's event stream (GET) floods likewise, after
 * asking the client to reconnect 10 ms after it ends; else GET is `405`.
 */
export async function floodingMcpServer() {
  const state = { floodEvents: false, gets: 0, progressAsked: [] as boolean[], streams: [] as Stream[] };
  const flood = (req: IncomingMessage, res: ServerResponse, method: string, preface = '') => {
    const stream: Stream = { method, written: 0, ended: false };
    state.streams.push(stream);
    req.socket.once('close', () => (stream.ended = true));
    res.writeHead(200, { 'content-type': 'text/event-stream', 'mcp-session-id': 's1' });
    res.write(preface);
    const block = NOTICE_LINE.repeat(Math.floor(65536 / NOTICE_LINE.length));
    const pump = (): void => {
      while (!res.destroyed) {
        stream.written += Math.floor(65536 / NOTICE_LINE.length);
        if (!res.write(block)) return void res.once('drain', pump);
      }
    };
    pump();
  };
  const server: Server = createServer((req, res) => {
    if (req.method === 'GET') {
      state.gets++;
      return state.floodEvents ? flood(req, res, 'GET', 'retry: 10\n\n') : void res.writeHead(405).end();
    }
    if (req.method === 'DELETE') return void res.writeHead(200).end();
    let text = '';
    req.on('data', (c: Buffer) => (text += c.toString('utf8')));
    req.on('end', () => {
      const message = JSON.parse(text) as {
        id?: number;
        method: string;
        params?: { name?: string; protocolVersion?: string; arguments?: { count?: number }; _meta?: { progressToken?: unknown } };
      };
      if (message.id === undefined) return void res.writeHead(202).end();
      const result = (value: unknown) => JSON.stringify({ jsonrpc: '2.0', id: message.id, result: value });
      if (message.method === 'initialize') {
        const answer = result({ protocolVersion: message.params!.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: 'flood', version: '1' } });
        return void res.writeHead(200, { 'content-type': 'application/json', 'mcp-session-id': 's1' }).end(answer);
      }
      if (message.method === 'tools/list') {
        const tool = (name: string, properties: object = {}) => ({ name, inputSchema: { type: 'object', properties }, annotations: { readOnlyHint: true } });
        const answer = result({ tools: [tool('flood'), tool('burst', { count: { type: 'integer' } }), tool('ok')] });
        return void res.writeHead(200, { 'content-type': 'application/json', 'mcp-session-id': 's1' }).end(answer);
      }
      if (message.method === 'tools/call') state.progressAsked.push(message.params?._meta?.progressToken !== undefined);
      if (message.params?.name === 'flood') return flood(req, res, 'flood');
      if (message.params?.name === 'burst') {
        res.writeHead(200, { 'content-type': 'text/event-stream', 'mcp-session-id': 's1' });
        return void res.end(NOTICE_LINE.repeat(message.params.arguments?.count ?? 0) + `data: ${result({ content: [{ type: 'text', text: 'done' }] })}\n\n`);
      }
      res.writeHead(200, { 'content-type': 'application/json', 'mcp-session-id': 's1' }).end(result({ content: [{ type: 'text', text: 'fine' }] }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const close = async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  };
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`, state, close };
}
