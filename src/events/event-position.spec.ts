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

  it('take 0-0 as the start of the log, which tells nothing', () => {
    expect(parsePosition(seal, FROM_THE_START)).toEqual({ tx: 0n, seq: 0n });
  });

  it('refuse anything this organization’s streams would not have written', () => {
    const other = new PositionSeal(Buffer.alloc(32, 3), 'events\u0000org-b');
    for (const bad of [
      '',
      '1-2',
      '7345-912',
      '0-1',
      ' 0-0',
      formatPosition(other, { tx: 1n, seq: 1n }),
      // A sequence past PostgreSQL's bigint, sealed with the right key (only a leaked secret makes one).
      seal.seal(1n, 9223372036854775808n),
    ]) {
      expect(parsePosition(seal, bad)).toBeUndefined();
    }
  });
});
