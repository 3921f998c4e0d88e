import type { FastifyRequest } from 'fastify';
import { ApiError } from './api-error';

/**
 * The event loop's time one owner's request bodies may take to parse, on average, in ms per
 * second; `HTTP_BODY_PARSE_MS_PER_ORG`. A quarter of the loop: three quarters stay for everyone else.
 */
export const DEFAULT_BODY_PARSE_MS_PER_ORG = 250;
/** How far ahead of its share an owner may get (in seconds of it), so a lone large body after a quiet while is always read. */
const BURST_SECONDS = 2;

/**
 * Time spent in `JSON.parse` of request bodies, per owner (an organization: `budgetOwnerOf`), as a
 * bucket that drains at the owner's share. `JSON.parse` holds the event loop whole, and its cost is
 * not the body's size: a megabyte of 90,000 distinct key names took 77 to 400 ms on a loaded
 * machine, the same bytes of repeated names 10 to 20. One builder key sending such bodies to
 * `POST /agents` within its rate limit (4 connections, 3.8 a second) took another organization's
 * `GET /agents` from p50 12 ms to 709 ms (attack round 15, R-F4). Past its burst an owner's next body
 * is refused before it is read (`503` with `Retry-After: 1`, anonymous-requests.ts), until the
 * bucket has drained; others' are read meanwhile. The platform token is not held to it.
 */
export class ParseTime {
  private readonly levels = new Map<string, { ms: number; at: number }>();
  private readonly owners = new WeakMap<FastifyRequest, string>();

  constructor(
    private readonly msPerSecond: number,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** Whether `owner` is past its burst: its next body is not read. */
  over(owner: string): boolean {
    if (this.msPerSecond <= 0) return false;
    const level = this.drained(owner);
    return level !== undefined && level.ms > BURST_SECONDS * this.msPerSecond;
  }

  /** The owner the parse of `request`'s body is charged to (set before its body is read). */
  own(request: FastifyRequest, owner: string): void {
    if (this.msPerSecond > 0 && owner !== 'platform') this.owners.set(request, owner);
  }

  /** `JSON.parse(text)`, its time charged to the request's owner (thrown errors too: a body that fails late cost as much). */
  parse(request: FastifyRequest, text: string): unknown {
    const owner = this.owners.get(request);
    if (owner === undefined) return JSON.parse(text);
    const started = this.now();
    try {
      return JSON.parse(text);
    } finally {
      this.charge(owner, this.now() - started);
    }
  }

  charge(owner: string, ms: number): void {
    const level = this.drained(owner);
    if (level) level.ms += ms;
    else this.levels.set(owner, { ms, at: this.now() });
  }

  /** The owner's bucket as of now; undefined (and forgotten) once empty. */
  private drained(owner: string): { ms: number; at: number } | undefined {
    const level = this.levels.get(owner);
    if (!level) return undefined;
    const now = this.now();
    level.ms = Math.max(0, level.ms - ((now - level.at) * this.msPerSecond) / 1000);
    level.at = now;
    if (level.ms === 0) {
      this.levels.delete(owner);
      return undefined;
    }
    return level;
  }
}

/** `503 service_unavailable` with `Retry-After: 1`: an owner past its share of parsing time. */
export function parseTimeSpent(): ApiError {
  return new ApiError(
    'service_unavailable',
    "This organization's request bodies have taken their share of this server's time; try again shortly.",
    undefined,
    undefined,
    { 'Retry-After': '1' },
  );
}
