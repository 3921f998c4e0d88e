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

const BIGINT_MAX = 9223372036854775807n;
/** The one id no stream sends but every stream takes: before every event (a replay of the whole log). */
export const FROM_THE_START = '0-0';

export function formatPosition(seal: PositionSeal, p: EventPosition): string {
  return seal.seal(p.tx, p.seq);
}

/** The position `text` names, or undefined when it is not one this organization's streams hand out. */
export function parsePosition(seal: PositionSeal, text: string): EventPosition | undefined {
  if (text === FROM_THE_START) return { tx: 0n, seq: 0n };
  const pair = seal.open(text);
  if (!pair || pair[1] > BIGINT_MAX) return undefined;
  return { tx: pair[0], seq: pair[1] };
}

export function comparePositions(a: EventPosition, b: EventPosition): number {
  if (a.tx !== b.tx) return a.tx < b.tx ? -1 : 1;
  return a.seq === b.seq ? 0 : a.seq < b.seq ? -1 : 1;
}
