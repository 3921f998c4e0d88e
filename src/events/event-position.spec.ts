import { PositionSeal } from '../secrets/position-seals';
import { comparePositions, formatPosition, FROM_THE_START, parsePosition } from './event-position';

describe('event positions', () => {
  const seal = new PositionSeal(Buffer.alloc(32, 3), 'events\u0000org-a');

  it('round-trip sealed, and order by transaction then sequence', () => {
    const p = { tx: 18446744073709551615n, seq: 9223372036854775807n };
    const id = formatPosition(seal, p);
    expect(id).toMatch(/^[A-Za-z0-9_-]{32}$/);
    expect(parsePosition(seal, id)).toEqual(p);
    expect(comparePositions({ tx: 5n, seq: 100n }, { tx: 6n, seq: 1n })).toBe(-1);
    expect(comparePositions({ tx: 6n, seq: 2n }, { tx: 6n, seq: 1n })).toBe(1);
    expect(comparePositions({ tx: 6n, seq: 1n }, { tx: 6n, seq: 1n })).toBe(0);
  });

  it('seal a position between transactions (where a stream opens) differently each time, and read it back', () => {
    const opening = { tx: 7345n, seq: 0n };
    const ids = Array.from({ length: 20 }, () => formatPosition(seal, opening));
    // The horizon is every organization's: two openings at the same one must not be told apart from two at different ones.
    expect(new Set(ids).size).toBe(20);
    for (const id of ids) expect(parsePosition(seal, id)).toEqual(opening);
    // An event's position: one id, the same in every stream.
    expect(formatPosition(seal, { tx: 7345n, seq: 9n })).toBe(formatPosition(seal, { tx: 7345n, seq: 9n }));
  });

  it('take 0-0 as the start of the log, which tells nothing', () => {
    expect(parsePosition(seal, FROM_THE_START)).toEqual({ tx: 0n, seq: 0n });
  });

  it('refuse anything this organization’s streams would not have written', () => {
    const other = new PositionSeal(Buffer.alloc(32, 3), 'events\u0000org-b');
    for (const bad of ['', '1-2', '7345-912', '0-1', ' 0-0', formatPosition(other, { tx: 1n, seq: 1n }), formatPosition(other, { tx: 1n, seq: 0n })]) {
      expect(parsePosition(seal, bad)).toBeUndefined();
    }
  });
});
