import type { FastifyReply, FastifyRequest } from 'fastify';
import { unreadAnswersProblem } from '../common/answer-budget';
import { PROBLEM_CONTENT_TYPE } from '../common/problem.filter';

/**
 * The bridge between Fastify and the MCP SDK's web-standard HTTP entry (`Request` in, `Response`
 * out). Fastify has parsed the body already (the SDK gets it as `parsedBody`), so the `Request`
 * carries headers and an abort signal only; the `Response` is streamed to the raw socket as it
 * comes, because an SSE answer (progress while a call waits for approval) must reach the client
 * before it ends.
 */

/** Headers a body-less `Request` must not carry (the body was read by Fastify). */
const DROPPED = new Set(['content-length', 'transfer-encoding', 'connection', 'keep-alive', 'expect', 'upgrade']);

export function toWebRequest(req: FastifyRequest, signal: AbortSignal): Request {
  const headers = new Headers();
  for (const [name, value] of Object.entries(req.headers)) {
    if (value === undefined || DROPPED.has(name) || name.startsWith(':')) continue;
    for (const v of Array.isArray(value) ? value : [value]) headers.append(name, v);
  }
  // The URL only names the endpoint to the SDK; its host is not trusted for anything.
  return new Request(new URL(req.url, 'http://mcp.invalid'), { method: req.method, headers, signal });
}

/**
 * Hop-by-hop headers of the SDK's answer: they describe its connection, not ours (Node manages
 * ours, and a `connection: keep-alive` copied over answered a client that had sent
 * `Connection: close` as if the connection stayed open).
 */
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'transfer-encoding', 'proxy-connection', 'upgrade', 'te', 'trailer']);

/**
 * Writes the SDK's answer to the hijacked reply, streaming the body; resolves when it is written or
 * the client left. `admit` is asked before each chunk is written (the node's budget of unsent
 * answers, which a hijacked reply is outside of otherwise): a chunk refused before the head was
 * written is answered `503` (`refused`) instead, a later one closes the connection, as an answer
 * left unread past the send timeout is. The head waits for the first chunk unless `headAtOnce`
 * (a `tools/call`, which may be held for a decision: its client hears at once that it is served).
 */
export async function sendWebResponse(
  reply: FastifyReply,
  res: Response,
  requestId: string,
  admit: (size: number) => boolean,
  refused: () => { status: number; headers: Record<string, string>; body: string },
  headAtOnce: boolean,
): Promise<void> {
  const raw = reply.raw;
  // What Fastify would have sent (CORS, Vary), which a hijacked reply must send itself.
  const headers = { ...(reply.getHeaders() as Record<string, string | string[]>) };
  res.headers.forEach((value, name) => {
    if (HOP_BY_HOP.has(name)) return;
    // Fastify's `Vary: Origin` (CORS) stays, whatever the SDK varies on.
    if (name === 'vary' && headers.vary) headers.vary = `${String(headers.vary)}, ${value}`;
    // Our `no-store` (set for every /api/v1 answer) stays too: the SDK's `no-cache, no-transform` on
    // its event streams let a cache store tool results and a system prompt (attack round 22, AG-F2).
    else if (name === 'cache-control' && headers[name] === 'no-store') headers[name] = /no-transform/i.test(value) ? 'no-store, no-transform' : 'no-store';
    else headers[name] = value;
  });
  headers['x-request-id'] = requestId;
  if (!res.body) {
    raw.writeHead(res.status, headers);
    raw.end();
    return;
  }
  if (headAtOnce) raw.writeHead(res.status, headers);
  const reader = res.body.getReader();
  const stop = () => void reader.cancel().catch(() => undefined);
  raw.once('close', stop);
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      if (!admit(value.byteLength)) {
        stop();
        if (raw.headersSent) return void raw.destroy();
        const answer = refused();
        raw.writeHead(answer.status, { ...answer.headers, 'x-request-id': requestId });
        raw.end(answer.body);
        return;
      }
      if (!raw.headersSent) raw.writeHead(res.status, headers);
      raw.write(value);
    }
  } catch {
    // The client went away, or the stream was cancelled: nothing left to tell anyone.
  } finally {
    raw.off('close', stop);
    if (!raw.headersSent && !raw.destroyed) raw.writeHead(res.status, headers);
    raw.end();
  }
}

/** The `503` of the node's budget of unsent answers, with what Fastify would have sent (CORS, Vary). */
export function unreadAnswersRefusal(reply: FastifyReply): { status: number; headers: Record<string, string>; body: string } {
  const { problem, headers } = unreadAnswersProblem();
  return {
    status: problem.status,
    headers: { ...(reply.getHeaders() as Record<string, string>), ...headers, 'content-type': PROBLEM_CONTENT_TYPE },
    body: JSON.stringify(problem),
  };
}
