import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Transform } from 'node:stream';
import { ApiError } from './api-error';
import { declaresBody } from './body-encoding';
import { ParseTime } from './parse-time';

/** What a client refused for want of room is told to wait: bodies are read in seconds or cut by the request timeout. */
export const BODY_BUDGET_RETRY_AFTER_SECONDS = 1;
/** Under pressure, the part of the budget (bytes, and bodies being read) one owner may hold. */
export const OWNER_SHARE = 1 / 8;

/**
 * Bounds the bytes of request bodies this node holds at once while reading them, all requests
 * together. A body is read whole (up to 1 MiB) before it is parsed; requests without a token, or
 * with one that is no credential, are refused before it (auth/anonymous-requests.ts), but a real
 * key's connections could still make the node hold a megabyte each for as long as the request
 * timeout allows. Past the bound a body is refused `503 service_unavailable` with
 * Retry-After, as its bytes arrive; nothing else waits for it. A body's bytes count from when
 * they are read until it is parsed, or its request ends.
 *
 * Past half the bound, every body has an owner (its credential's organization, checked before
 * the body: anonymous-requests.ts), and one owner may hold at most OWNER_SHARE of the bytes and
 * of `maxBodies`: a real key within its rate limit filled the rest alone before.
 */
export function boundBufferedBodies(fastify: FastifyInstance, maxBytes: number, maxBodies: number, parseMsPerOwner = 0): BodyBudget {
  let held = 0;
  const owners = new Map<string, Owner>();
  // A claimed body counts against its owner until it is read, or its request ends.
  const claims = new WeakMap<FastifyRequest, { owner: Owner; read: () => void }>();
  const shareBytes = Math.max(1, Math.floor(maxBytes * OWNER_SHARE));
  const shareBodies = Math.max(1, Math.floor(maxBodies * OWNER_SHARE));
  const underPressure = () => held > maxBytes / 2;
  const forget = (entry: Owner) => {
    if (entry.bodies === 0 && entry.bytes === 0 && owners.get(entry.name) === entry) owners.delete(entry.name);
  };
  fastify.addHook('preParsing', (request, reply, payload, done) => {
    if (!declaresBody(request.headers)) {
      done(null, payload);
      return;
    }
    const claim = claims.get(request);
    const owner = claim?.owner;
    let mine = 0;
    let released = false;
    const meter = new Transform({
      transform(chunk: Buffer, _encoding, callback) {
        if (held + chunk.length > maxBytes) return callback(full());
        if (owner && owner.bytes + chunk.length > shareBytes && underPressure()) return callback(full());
        held += chunk.length;
        mine += chunk.length;
        if (owner) owner.bytes += chunk.length;
        callback(null, chunk);
      },
    });
    const release = () => {
      if (released) return;
      released = true;
      held -= mine;
      if (owner) owner.bytes -= mine;
      claim?.read();
      if (owner) forget(owner);
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
  return {
    parseTime: new ParseTime(parseMsPerOwner),
    underPressure,
    claim(request, reply, name) {
      let entry = owners.get(name);
      if (entry && entry.bodies >= shareBodies) return false;
      if (!entry) owners.set(name, (entry = { name, bytes: 0, bodies: 0 }));
      const owner = entry;
      owner.bodies += 1;
      let reading = true;
      const read = () => {
        if (!reading) return;
        reading = false;
        owner.bodies -= 1;
        forget(owner);
      };
      // Its meter ends the claim when the body is read; the answer, if it never reaches one.
      claims.set(request, { owner, read });
      reply.raw.once('close', read);
      return true;
    },
  };
}

export interface BodyBudget {
  /**
   * More than half the budget is held: a request's credential is then checked before its body is
   * read (anonymous-requests.ts), so made-up tokens cannot hold the rest and refuse every other
   * client's body. Below it, nothing is checked twice.
   */
  underPressure(): boolean;
  /**
   * The body about to be read is `owner`'s (whose credential was checked first: its organization),
   * and counts against its share: false if that owner already reads its share of bodies.
   */
  claim(request: FastifyRequest, reply: FastifyReply, owner: string): boolean;
  /** Each owner's share of the time bodies take to parse (parse-time.ts). */
  parseTime: ParseTime;
}

interface Owner {
  name: string;
  bytes: number;
  bodies: number;
}

function full(): ApiError {
  return busy('The server is reading as many request bodies as it holds at once; try again shortly.');
}

/** A body refused under pressure because its organization already sends its share of the node's. */
export function ownerOverShare(): ApiError {
  return busy('The server is busy, and this organization already sends as many request bodies as it may meanwhile; try again shortly.');
}

function busy(detail: string): ApiError {
  const error = new ApiError('service_unavailable', detail, undefined, undefined, { 'Retry-After': String(BODY_BUDGET_RETRY_AFTER_SECONDS) });
  // Fastify would answer a stream error without a status of its own as 400.
  return Object.assign(error, { statusCode: 503 });
}
