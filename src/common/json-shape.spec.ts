import fc from 'fast-check';
import { MAX_MESSAGE_KEYS, messageCheck, MessageRefusal } from './json-shape';

const bytes = (text: string) => new TextEncoder().encode(text);

/** The depth a parser's recursion reaches in a JSON value. */
function depthOf(value: unknown): number {
  if (value === null || typeof value !== 'object') return 0;
  return 1 + Math.max(0, ...Object.values(value).map(depthOf));
}

/** The distinct member names of a JSON value, nested ones included. */
function namesOf(value: unknown, into = new Set<string>()): Set<string> {
  if (value !== null && typeof value === 'object') {
    if (!Array.isArray(value)) for (const k of Object.keys(value)) into.add(k);
    for (const v of Object.values(value)) namesOf(v, into);
  }
  return into;
}

/** Feeds `text` cut at the given points: why it was refused, null when it was not. */
function refusal(text: string, cuts: number[], eventStream: boolean, maxDepth: number, maxKeys = Infinity): MessageRefusal | null {
  const check = messageCheck(eventStream, maxDepth, maxKeys);
  const all = bytes(text);
  const points = [...new Set(cuts.map((c) => c % (all.length + 1)))].sort((a, b) => a - b);
  let from = 0;
  for (const to of [...points, all.length]) {
    const refused = check(all.subarray(from, to));
    if (refused !== null) return refused;
    from = to;
  }
  return null;
}

/** True while within `max` levels. */
const within = (text: string, cuts: number[], eventStream: boolean, max: number): boolean => refusal(text, cuts, eventStream, max) === null;

const deep = (levels: number, open = '{"a":', close = '}') => open.repeat(levels) + '1' + close.repeat(levels);

describe('messageCheck: nesting', () => {
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

describe('messageCheck: member names', () => {
  const keys = (text: string, cuts: number[], max: number, eventStream = false) => refusal(text, cuts, eventStream, 1_000, max);

  it('agrees with a parse on the distinct names of any JSON cut anywhere: values, array items and escapes are not names', () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 6 }), fc.array(fc.nat()), fc.integer({ min: 0, max: 12 }), (value, cuts, max) => {
        const text = JSON.stringify(value);
        expect(keys(text, cuts, max)).toBe(namesOf(value).size <= max ? null : 'keys');
      }),
    );
  });

  it('counts names apart however they are spelled around them: white space, escapes and chunks cut inside them', () => {
    const text = ' { "a\\"b" : "c", "d" :{"a\\"b":[ "e", {"f":"a\\"b"} ] } , "g\\u0041" : 1 }';
    expect(namesOf(JSON.parse(text)).size).toBe(4);
    for (const cuts of [[], [4], [5], [6], [7], [8], [9, 10, 11, 12, 13, 14, 15], Array.from({ length: text.length }, (_, i) => i)]) {
      expect(keys(text, cuts, 4)).toBeNull();
      expect(keys(text, cuts, 3)).toBe('keys');
    }
  });

  it('refuses one object or many small ones of more distinct names than the bound, and not records repeating theirs', () => {
    const object = (names: number, from = 0) => `{${Array.from({ length: names }, (_, i) => `"k${from + i}":${i}`).join(',')}}`;
    expect(keys(object(MAX_MESSAGE_KEYS), [], MAX_MESSAGE_KEYS)).toBeNull();
    // Counted by a 30-bit hash: among 20,000 names a collision or two may count one less, never more.
    expect(keys(object(MAX_MESSAGE_KEYS + 100), [], MAX_MESSAGE_KEYS)).toBe('keys');
    const small = `[${Array.from({ length: 2_001 }, (_, i) => object(10, i * 10)).join(',')}]`;
    expect(keys(small, [100, 5000], MAX_MESSAGE_KEYS)).toBe('keys');
    const records = `[${Array.from({ length: 50_000 }, () => object(10)).join(',')}]`;
    expect(keys(records, [100, 5000], MAX_MESSAGE_KEYS)).toBeNull();
    // Long names too, past the length at which other strings are skipped natively.
    const long = (i: number) => `"${'n'.repeat(100)}${i}"`;
    expect(keys(`{${long(1)}:1,${long(2)}:2,${long(3)}:3}`, [50, 103], 2)).toBe('keys');
  });

  it('counts each event of a stream on its own', () => {
    const event = (from: number) => `data: {"a${from}":1,"b${from}":2}\n\n`;
    expect(keys(event(0) + event(1) + event(2), [3, 20], 2, true)).toBeNull();
    expect(keys(`data: {"a":1,\ndata: "b":2,"c":3}\n\n`, [], 2, true)).toBe('keys');
  });
});
