import { randomBytes } from 'node:crypto';
import type { PositionSeal } from '../secrets/position-seals';

/**
 * Where an event sits in its organization's stream: the transaction that wrote it, then its
 * sequence number. Sent as the SSE `id:` sealed under the organization's key
 * (src/secrets/position-seals.ts): both numbers are shared by every organization, so in the clear
 * the gap between two ids counted what all the others wrote. Clients only hand an id back as
 * `Last-Event-ID`.
 */
export interface EventPosition {
  tx: bigint;
  seq: bigint;
}

/** The one id no stream sends but every stream takes: before every event (a replay of the whole log). */
export const FROM_THE_START = '0-0';

/** Set in the sealed sequence of a position between transactions: no event's (a sequence is a bigint). */
const BETWEEN = 1n << 63n;

/**
 * `p` as an id. An event's position (seq > 0) seals the same way every time: the same event has
 * the same id in every stream of its organization. A position between transactions (seq 0: where
 * a stream opens, at the server's horizon) is sealed with 63 random bits beside it: the horizon is
 * every organization's, and a deterministic id of it answered whether anyone else had written
 * between two openings (attack round 6).
 */
export function formatPosition(seal: PositionSeal, p: EventPosition): string {
  if (p.seq !== 0n) return seal.seal(p.tx, p.seq);
  return seal.seal(p.tx, BETWEEN | (randomBytes(8).readBigUInt64BE() & (BETWEEN - 1n)));
}

/** The position `text` names, or undefined when it is not one this organization's streams hand out. */
export function parsePosition(seal: PositionSeal, text: string): EventPosition | undefined {
  if (text === FROM_THE_START) return { tx: 0n, seq: 0n };
  const pair = seal.open(text);
  if (!pair) return undefined;
  if (pair[1] & BETWEEN) return { tx: pair[0], seq: 0n };
  return { tx: pair[0], seq: pair[1] };
}

export function comparePositions(a: EventPosition, b: EventPosition): number {
  if (a.tx !== b.tx) return a.tx < b.tx ? -1 : 1;
  return a.seq === b.seq ? 0 : a.seq < b.seq ? -1 : 1;
}
