import fc from 'fast-check';
import { nestingCheck } from './answer-depth';

const bytes = (text: string) => new TextEncoder().encode(text);

/** The depth a parser's recursion reaches in a JSON value. */
function depthOf(value: unknown): number {
  if (value === null || typeof value !== 'object') return 0;
  return 1 + Math.max(0, ...Object.values(value).map(depthOf));
}

/** Feeds `text` cut at the given points; true while within `max`. */
function within(text: string, cuts: number[], eventStream: boolean, max: number): boolean {
  const check = nestingCheck(eventStream, max);
  const all = bytes(text);
  const points = [...new Set(cuts.map((c) => c % (all.length + 1)))].sort((a, b) => a - b);
  let from = 0;
  for (const to of [...points, all.length]) {
    if (!check(all.subarray(from, to))) return false;
    from = to;
  }
  return true;
}

const deep = (levels: number, open = '{"a":', close = '}') => open.repeat(levels) + '1' + close.repeat(levels);

describe('nestingCheck', () => {
  it('agrees with a parse on any JSON cut anywhere: brackets inside strings and escapes do not count', () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 8 }), fc.array(fc.nat()), fc.integer({ min: 0, max: 9 }), (value, cuts, max) => {
        const text = JSON.stringify(value);
        expect(within(text, cuts, false, max)).toBe(depthOf(value) <= max);
      }),
    );
  });

  it('agrees with a parse on any JSON sent as event stream data lines, cut anywhere, several events in one chunk', () => {
    fc.assert(
      fc.property(
        fc.array(fc.jsonValue({ maxDepth: 6 }), { minLength: 1, maxLength: 4 }),
        fc.array(fc.nat()),
        fc.integer({ min: 0, max: 7 }),
        (values, cuts, max) => {
          const text = values.map((v) => `event: message\ndata: ${JSON.stringify(v)}\n\n`).join('');
          expect(within(text, cuts, true, max)).toBe(values.every((v) => depthOf(v) <= max));
        },
      ),
    );
  });

  it('counts to the limit, not past it', () => {
    expect(within(deep(128), [], false, 128)).toBe(true);
    expect(within(deep(129), [], false, 128)).toBe(false);
    expect(within(deep(129, '[', ']'), [7], false, 128)).toBe(false);
    expect(within(`{"s":"${'['.repeat(500)}\\"${'{'.repeat(500)}"}`, [3, 9, 510], false, 2)).toBe(true);
  });

  it('reads only data lines of an event stream, one event at a time, whatever ends its lines', () => {
    const event = (data: string, eol: string) => `id: [[[[[[\r\n: {{{{{{ a comment${eol}event: message${eol}data: ${data}${eol}${eol}`;
    for (const eol of ['\n', '\r\n', '\r']) {
      // Many events each within the limit: each is counted on its own.
      const many = Array.from({ length: 20 }, () => event(deep(4), eol)).join('');
      expect(within(many, [1, 2, 3, 50, 51, 300], true, 4)).toBe(true);
      expect(within(event(deep(5), eol), [], true, 4)).toBe(false);
      // One event's data over several lines is one message.
      expect(within(`data: ${'['.repeat(3)}${eol}data: ${'['.repeat(3)}${eol}${eol}`, [], true, 5)).toBe(false);
    }
    // CR LF cut between its two bytes is one line end, not an empty line that ends the event.
    const text = `data: [[[\r\ndata: [[[\r\n\r\n`;
    expect(within(text, [text.indexOf('\n')], true, 5)).toBe(false);
    // A field that only starts like `data` is not data.
    expect(within(`database: [[[[[[\n\n`, [], true, 2)).toBe(true);
  });
});
