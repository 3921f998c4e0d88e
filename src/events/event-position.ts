/**
 * Where an event sits in its organization's stream: the transaction that wrote it, then its
 * sequence number. Written `<tx>-<seq>` as the SSE `id:`; opaque to clients, who only hand it
 * back as `Last-Event-ID`.
 */
export interface EventPosition {
  tx: bigint;
  seq: bigint;
}

const XID8_MAX = 18446744073709551615n;
const BIGINT_MAX = 9223372036854775807n;
const FORMAT = /^(\d{1,20})-(\d{1,19})$/;

export function formatPosition(p: EventPosition): string {
  return `${p.tx}-${p.seq}`;
}

/** The position written in `text`, or undefined when it is not one this server hands out. */
export function parsePosition(text: string): EventPosition | undefined {
  const m = FORMAT.exec(text);
  if (!m) return undefined;
  const tx = BigInt(m[1]);
  const seq = BigInt(m[2]);
  if (tx > XID8_MAX || seq > BIGINT_MAX) return undefined;
  return { tx, seq };
}

export function comparePositions(a: EventPosition, b: EventPosition): number {
  if (a.tx !== b.tx) return a.tx < b.tx ? -1 : 1;
  return a.seq === b.seq ? 0 : a.seq < b.seq ? -1 : 1;
}
