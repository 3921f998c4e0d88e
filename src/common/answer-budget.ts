import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ServerResponse } from 'node:http';
import { ApiError } from './api-error';
import { PROBLEM_CONTENT_TYPE, toProblem } from './problem.filter';

/** An answer smaller than this is never held back: only large ones add up to gigabytes. */
export const LARGE_ANSWER_BYTES = 64 * 1024;
/** The most bytes of large answers this node holds unsent, all connections together. */
export const MAX_UNSENT_ANSWER_BYTES = 256 * 1024 * 1024;
/** How long a large answer may take to leave the node before its connection is closed. */
export const ANSWER_SEND_TIMEOUT_MS = 30_000;
/** Past half the bound, the part of it one owner's unsent answers may take. */
export const ANSWER_OWNER_SHARE = 1 / 8;
const UNSENT_ANSWERS = 'unsentAnswers';

export interface UnsentAnswers {
  /** Bytes of large answers not yet sent, all connections together. */
  held: () => number;
  /**
   * Counts `size` bytes of an answer being written to `raw` until it is sent (or its connection
   * closed at the send timeout); false, counting nothing, when they do not fit. What a hijacked
   * reply (an MCP answer) asks before it writes a large chunk; others are counted in `onSend`.
   */
  admit: (request: FastifyRequest, raw: ServerResponse, size: number) => boolean;
}

/**
 * Bounds what clients that do not read their answers make the node hold. An answer is built
 * whole and stays in the node until the socket takes it: 300 connections of one organization
 * asking for a 4 MiB page each and reading nothing took a node from 0.2 GB to 3.2 GB, for the two
 * minutes before the idle timeout closed them. A large answer counts from when it is sent until
 * it has left the node; past the bound the next large one is `503 service_unavailable` with
 * Retry-After, and one still unsent after ANSWER_SEND_TIMEOUT_MS has its connection closed.
 * Streams (run and audit events) write their own bounded batches and are not counted here. An
 * MCP answer, written past Fastify, asks `admit` for each large chunk (attack round 12, I-F2).
 *
 * Past half the bound one owner (`ownerOf`: an organization, or an address for requests without
 * a credential) may hold at most ANSWER_OWNER_SHARE of it: one key within its rate limit filled
 * the whole bound before, and every other organization's large answers were refused.
 */
export function boundUnsentAnswers(
  fastify: FastifyInstance,
  ownerOf: (request: FastifyRequest) => string,
  maxBytes = MAX_UNSENT_ANSWER_BYTES,
  sendTimeoutMs = ANSWER_SEND_TIMEOUT_MS,
): UnsentAnswers {
  let held = 0;
  const owners = new Map<string, number>();
  const share = Math.floor(maxBytes * ANSWER_OWNER_SHARE);
  const admit = (request: FastifyRequest, raw: ServerResponse, size: number): boolean => {
    if (size < LARGE_ANSWER_BYTES) return true;
    const owner = ownerOf(request);
    const ownerHeld = owners.get(owner) ?? 0;
    if (held + size > maxBytes || (held > maxBytes / 2 && ownerHeld + size > share)) return false;
    held += size;
    owners.set(owner, ownerHeld + size);
    let released = false;
    const timer = setTimeout(() => raw.destroy(), sendTimeoutMs);
    timer.unref();
    const release = () => {
      if (released) return;
      released = true;
      held -= size;
      const left = owners.get(owner)! - size;
      if (left === 0) owners.delete(owner);
      else owners.set(owner, left);
      clearTimeout(timer);
    };
    raw.once('finish', release);
    raw.once('close', release);
    return true;
  };
  fastify.addHook('onSend', (request, reply, payload, done) => {
    // Most answers are a few hundred characters: at most 3 bytes each in UTF-8, never measured.
    if (typeof payload === 'string' && payload.length * 3 < LARGE_ANSWER_BYTES) return done(null, payload);
    const size = typeof payload === 'string' ? Buffer.byteLength(payload) : Buffer.isBuffer(payload) ? payload.length : 0;
    if (admit(request, reply.raw, size)) return done(null, payload);
    const { problem, headers } = unreadAnswersProblem();
    void reply.status(503).headers(headers).type(PROBLEM_CONTENT_TYPE);
    return done(null, JSON.stringify(problem));
  });
  const budget = { held: () => held, admit };
  fastify.decorate(UNSENT_ANSWERS, budget);
  return budget;
}

/** The budget of the server `request` came to, for answers written past Fastify (a hijacked reply); undefined without one. */
export function unsentAnswersOf(request: FastifyRequest): UnsentAnswers | undefined {
  return (request.server as unknown as Record<string, UnsentAnswers | undefined>)[UNSENT_ANSWERS];
}

/** `503 service_unavailable` with `Retry-After: 1`: what a large answer past the bound is. */
export function unreadAnswersProblem(): ReturnType<typeof toProblem> {
  return toProblem(
    new ApiError('service_unavailable', 'The server is holding as many unread answers as it can; try again shortly.', undefined, undefined, {
      'Retry-After': '1',
    }),
  );
}
