import type { FastifyInstance } from 'fastify';
import { Transform } from 'node:stream';
import { ApiError } from './api-error';
import { declaresBody } from './body-encoding';

/** What a client refused for want of room is told to wait: bodies are read in seconds or cut by the request timeout. */
export const BODY_BUDGET_RETRY_AFTER_SECONDS = 1;

/**
 * Bounds the bytes of request bodies this node holds at once while reading them, all requests
 * together. A body is read whole (up to 1 MiB) before it is parsed, and a bearer token is checked
 * only after that: requests without one are refused before (auth/anonymous-requests.ts), but any
 * token-shaped header would do to make the node hold a megabyte per connection for as long as
 * the request timeout allows. Past the bound a body is refused `503 service_unavailable` with
 * Retry-After, as its bytes arrive; nothing else waits for it. A body's bytes count from when
 * they are read until it is parsed, or its request ends.
 */
export function boundBufferedBodies(fastify: FastifyInstance, maxBytes: number): BodyBudget {
  let held = 0;
  fastify.addHook('preParsing', (request, reply, payload, done) => {
    if (!declaresBody(request.headers)) {
      done(null, payload);
      return;
    }
    let mine = 0;
    let released = false;
    const meter = new Transform({
      transform(chunk: Buffer, _encoding, callback) {
        if (held + chunk.length > maxBytes) return callback(full());
        held += chunk.length;
        mine += chunk.length;
        callback(null, chunk);
      },
    });
    const release = () => {
      if (released) return;
      released = true;
      held -= mine;
    };
    // 'close' follows the end of the body, or its refusal; the response's covers a client gone mid-body.
    meter.once('close', release);
    reply.raw.once('close', () => {
      release();
      meter.destroy();
    });
    // Not pipeline(): it would destroy the request, and with it the socket the 503 is written on.
    payload.once('error', (err) => meter.destroy(err));
    payload.pipe(meter);
    done(null, meter);
  });
  return { underPressure: () => held > maxBytes / 2 };
}

export interface BodyBudget {
  /**
   * More than half the budget is held: a request's credential is then checked before its body is
   * read (anonymous-requests.ts), so made-up tokens cannot hold the rest and refuse every other
   * client's body. Below it, nothing is checked twice.
   */
  underPressure(): boolean;
}

function full(): ApiError {
  const error = new ApiError(
    'service_unavailable',
    'The server is reading as many request bodies as it holds at once; try again shortly.',
    undefined,
    undefined,
    { 'Retry-After': String(BODY_BUDGET_RETRY_AFTER_SECONDS) },
  );
  // Fastify would answer a stream error without a status of its own as 400.
  return Object.assign(error, { statusCode: 503 });
}
