import { comparePositions, formatPosition, parsePosition } from './event-position';

describe('event positions', () => {
  it('round-trip, and order by transaction then sequence', () => {
    const p = { tx: 18446744073709551615n, seq: 9223372036854775807n };
    expect(parsePosition(formatPosition(p))).toEqual(p);
    expect(comparePositions({ tx: 5n, seq: 100n }, { tx: 6n, seq: 1n })).toBe(-1);
    expect(comparePositions({ tx: 6n, seq: 2n }, { tx: 6n, seq: 1n })).toBe(1);
    expect(comparePositions({ tx: 6n, seq: 1n }, { tx: 6n, seq: 1n })).toBe(0);
  });

  it('refuse anything this server would not have written', () => {
    for (const bad of [
      '',
      '1',
      '1-',
      '-1',
      '1-2-3',
      ' 1-2',
      '1.2',
      '0x1-2',
      '18446744073709551616-1',
      '1-9223372036854775808',
      '1'.repeat(21) + '-1',
      '1-２',
    ]) {
      expect(parsePosition(bad)).toBeUndefined();
    }
  });
});
