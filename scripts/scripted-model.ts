import { createServer, IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * An OpenAI-compatible Chat Completions server on a loopback port, answering from a script with
 * the real wire format: `data: {chunk}` Server-Sent Events ending in `data: [DONE]`, tool call
 * arguments split across chunks, parallel tool calls by `index`, usage in the last chunk. The
 * requests it received are kept for assertions.
 */
export type ScriptedAnswer =
  | { text: string; usage?: { prompt: number; completion: number } }
  | { toolCalls: { id: string; name: string; arguments: string }[]; text?: string; usage?: { prompt: number; completion: number } }
  | { status: number; body?: unknown; headers?: Record<string, string> }
  /** A 200 whose body is not a completion at all. */
  | { garbage: string }
  /** Never answers (until the server closes): a model call in flight when a node dies. */
  | { hang: true };

export type Script = (request: ChatRequest, index: number) => ScriptedAnswer;

export interface ChatRequest {
  model: string;
  messages: { role: string; content: string | null; tool_calls?: { id: string; function: { name: string; arguments: string } }[]; tool_call_id?: string }[];
  tools?: { type: string; function: { name: string; description: string; parameters: unknown } }[];
  stream?: boolean;
  reasoning_effort?: string;
  temperature?: number;
  max_completion_tokens?: number;
  [key: string]: unknown;
}

export interface ScriptedModel {
  url: string;
  requests: ChatRequest[];
  authorizations: (string | undefined)[];
  /** Each request's headers, in order. */
  headers: IncomingMessage['headers'][];
  /** Replaces what the server answers from now on; its first request is index 0. */
  setScript(script: Script): void;
  /** Resolves when the server has received `n` requests in all. */
  received(n: number): Promise<void>;
  /** How many requests answered `{ hang: true }` the client gave up on (closed) before the server closed. */
  readonly abandoned: number;
  close(): Promise<void>;
}

/** Answers in order; past the end, the last answer again. */
export function sequence(...answers: ScriptedAnswer[]): Script {
  return (_req, i) => answers[Math.min(i, answers.length - 1)];
}

export async function startScriptedModel(script: Script): Promise<ScriptedModel> {
  let current = script;
  // The index a script sees counts from when it was set.
  let base = 0;
  const requests: ChatRequest[] = [];
  const authorizations: (string | undefined)[] = [];
  const headers: IncomingMessage['headers'][] = [];
  const waiters: { n: number; resolve: () => void }[] = [];
  const hanging = new Set<ServerResponse>();
  let abandoned = 0;
  let closing = false;

  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    let body = '';
    req.on('data', (d: Buffer) => (body += d.toString()));
    req.on('end', () => {
      if (req.method !== 'POST' || !req.url?.endsWith('/chat/completions')) {
        res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { message: 'not found' } }));
        return;
      }
      const parsed = JSON.parse(body) as ChatRequest;
      const index = requests.length;
      requests.push(parsed);
      authorizations.push(req.headers.authorization);
      headers.push(req.headers);
      for (const w of waiters.filter((w) => requests.length >= w.n)) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve();
      }
      answer(res, current(parsed, index - base), parsed);
    });
  });

  function answer(res: ServerResponse, a: ScriptedAnswer, req: ChatRequest): void {
    if ('hang' in a) {
      hanging.add(res);
      res.once('close', () => {
        hanging.delete(res);
        if (!closing) abandoned++;
      });
      return;
    }
    if ('status' in a) {
      res.writeHead(a.status, { 'content-type': 'application/json', ...(a.headers ?? {}) });
      res.end(JSON.stringify(a.body ?? { error: { message: `scripted ${a.status}`, type: 'server_error' } }));
      return;
    }
    if ('garbage' in a) {
      res.writeHead(200, { 'content-type': req.stream ? 'text/event-stream' : 'application/json' });
      res.end(req.stream ? `data: ${a.garbage}\n\n` : a.garbage);
      return;
    }
    const id = `chatcmpl-${Math.random().toString(36).slice(2)}`;
    const base = { id, object: 'chat.completion.chunk', created: Math.floor(Date.now() / 1000), model: req.model };
    const chunks: unknown[] = [{ ...base, choices: [{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }] }];
    const text = 'text' in a ? a.text : undefined;
    if (text) {
      // Several deltas, as a real stream sends them.
      for (const piece of text.match(/.{1,7}/gs) ?? []) chunks.push({ ...base, choices: [{ index: 0, delta: { content: piece }, finish_reason: null }] });
    }
    const calls = 'toolCalls' in a ? a.toolCalls : [];
    calls.forEach((c, i) => {
      chunks.push({
        ...base,
        choices: [
          { index: 0, delta: { tool_calls: [{ index: i, id: c.id, type: 'function', function: { name: c.name, arguments: '' } }] }, finish_reason: null },
        ],
      });
    });
    // Arguments arrive in pieces, the calls' pieces interleaved.
    const pieces = calls.map((c) => c.arguments.match(/.{1,5}/gs) ?? []);
    for (let k = 0; pieces.some((p) => k < p.length); k++) {
      pieces.forEach((p, i) => {
        if (k < p.length)
          chunks.push({ ...base, choices: [{ index: 0, delta: { tool_calls: [{ index: i, function: { arguments: p[k] } }] }, finish_reason: null }] });
      });
    }
    chunks.push({ ...base, choices: [{ index: 0, delta: {}, finish_reason: calls.length ? 'tool_calls' : 'stop' }] });
    const usage = a.usage ?? { prompt: 10, completion: 5 };
    chunks.push({
      ...base,
      choices: [],
      usage: { prompt_tokens: usage.prompt, completion_tokens: usage.completion, total_tokens: usage.prompt + usage.completion },
    });
    if (!req.stream) {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          id,
          object: 'chat.completion',
          created: base.created,
          model: req.model,
          choices: [
            {
              index: 0,
              message: {
                role: 'assistant',
                content: text ?? null,
                ...(calls.length ? { tool_calls: calls.map((c) => ({ id: c.id, type: 'function', function: { name: c.name, arguments: c.arguments } })) } : {}),
              },
              finish_reason: calls.length ? 'tool_calls' : 'stop',
            },
          ],
          usage: { prompt_tokens: usage.prompt, completion_tokens: usage.completion, total_tokens: usage.prompt + usage.completion },
        }),
      );
      return;
    }
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    for (const c of chunks) res.write(`data: ${JSON.stringify(c)}\n\n`);
    res.end('data: [DONE]\n\n');
  }

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    requests,
    authorizations,
    headers,
    setScript(s) {
      current = s;
      base = requests.length;
    },
    get abandoned() {
      return abandoned;
    },
    received(n) {
      if (requests.length >= n) return Promise.resolve();
      return new Promise((resolve) => waiters.push({ n, resolve }));
    },
    async close() {
      closing = true;
      for (const res of hanging) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
