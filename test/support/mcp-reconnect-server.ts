import { createServer, IncomingMessage, ServerResponse } from 'node:http';
import { AddressInfo } from 'node:net';

/**
 * A Streamable HTTP MCP server written on the wire that asks its client to reconnect at once
 * (`retry: 0`) and ends every event stream without anything in it. `session`: the session's event
 * stream (GET) does so; else GET without `Last-Event-ID` is `405`. `tools/call` (of `ok`) answers
 * a stream holding only a priming event (`id: p1`), and each resumption of it (a GET with
 * `Last-Event-ID`) the same: the answer never comes.
 */
export async function reconnectingMcpServer(options: { session: boolean }) {
  const state = { sessionGets: 0, resumptions: 0 };
  const stream = (res: ServerResponse, text: string) => res.writeHead(200, { 'content-type': 'text/event-stream', 'mcp-session-id': 's1' }).end(text);
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    if (req.method === 'GET') {
      if (req.headers['last-event-id'] !== undefined) {
        state.resumptions++;
        return void stream(res, 'retry: 0\nid: p1\ndata: \n\n');
      }
      state.sessionGets++;
      return options.session ? void stream(res, 'retry: 0\n\n') : void res.writeHead(405).end();
    }
    if (req.method === 'DELETE') return void res.writeHead(200).end();
    let text = '';
    req.on('data', (c: Buffer) => (text += c.toString('utf8')));
    req.on('end', () => {
      const message = JSON.parse(text) as { id?: number; method: string; params?: { protocolVersion?: string } };
      if (message.id === undefined) return void res.writeHead(202).end();
      const result = (value: unknown) => JSON.stringify({ jsonrpc: '2.0', id: message.id, result: value });
      const json = (value: unknown) => res.writeHead(200, { 'content-type': 'application/json', 'mcp-session-id': 's1' }).end(result(value));
      if (message.method === 'initialize') {
        return void json({ protocolVersion: message.params!.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: 'reconnect', version: '1' } });
      }
      if (message.method === 'tools/list') return void json({ tools: [{ name: 'ok', inputSchema: { type: 'object' }, annotations: { readOnlyHint: true } }] });
      if (message.method === 'tools/call') return void stream(res, 'retry: 0\nid: p1\ndata: \n\n');
      json({});
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const close = async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  };
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`, state, close };
}
