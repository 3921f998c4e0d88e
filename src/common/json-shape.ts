import { randomBytes } from 'node:crypto';

/**
 * The deepest an MCP server's message may nest. The SDK checks each message against its schemas by
 * recursion, a dozen stack frames a level: a tool list nested 1,600 deep overflowed the stack and
 * the connection was refused as "could not be reached: Maximum call stack size exceeded"; one bound now
 * holds for every message, results included (the product's own walks of a result, its redaction
 * and its output budget, recurse too). Twice the depth a request body may have (MAX_JSON_DEPTH); a tool's input schema is
 * held to 32 (mcp-tools.ts).
 */
export const MAX_MESSAGE_DEPTH = 128;

/**
 * The most distinct member names one message may hold. JSON.parse makes a hidden class for every
 * member name an object is given in a new order, and interns every name: 1,000 objects of 100
 * distinct names each (1.4 MB) took 258 ms to parse, 2,000 of them 1.4 s, one object of 1,600,000
 * names (28 MB, within the 32 MiB a call's answer may be) 7.2 s, all of it one piece of the event
 * loop, where 400 objects of the same 1,000 names took 107 ms (attack round 14, O). At this bound
 * a message's names cost its parse about 60 ms at most; a result that is a map of more keys is
 * refused (records that repeat their field names are not).
 */
export const MAX_MESSAGE_KEYS = 20_000;

/** Why a message is refused unparsed. */
export type MessageRefusal = 'depth' | 'keys';

/**
 * Per-process, so a server cannot choose names that all count as one: names are counted by a
 * 30-bit hash (a small integer, which a Set keeps without allocating), seeded here.
 */
const KEY_SEED = randomBytes(4).readUInt32LE(0);
const RECENT_MASK = 255;

/** Bytes of a string read one at a time before the rest is searched for natively: most strings of JSON are shorter. */
const SHORT_RUN = 64;

/**
 * Counts brackets and member names in JSON text as it arrives, bytes at a time, without parsing
 * it: what a parser's recursion would reach, and the names it would intern. Brackets, quotes,
 * colons, commas and backslashes are ASCII, and no byte of a multi-byte UTF-8 character is, so
 * bytes can be read as they come, cut anywhere.
 */
class JsonNesting {
  private depth = 0;
  private inString = false;
  private escaped = false;
  /** Whether each open level is an object (1) or an array (0). */
  private readonly objectAt: Uint8Array;
  /** A string starting now would be a member name: after `{`, or after `,` in an object. */
  private nameNext = false;
  /** The string being read is a member name, hashed so far into `hash`. */
  private inName = false;
  private hash = 0;
  private readonly names = new Set<number>();
  /** The latest name seen at each slot (by its low bits); -1: none. */
  private readonly recent = new Int32Array(RECENT_MASK + 1).fill(-1);

  constructor(
    private readonly maxDepth: number,
    private readonly maxKeys: number,
  ) {
    this.objectAt = new Uint8Array(maxDepth + 2);
  }

  /**
   * Why the message is refused, once it nests deeper than maxDepth or names more than maxKeys
   * distinct members; null while neither. A byte at a time, its state in locals while the loop
   * runs; past SHORT_RUN bytes of a string that is not a name without a quote or backslash, the
   * rest up to the next one is skipped by the array's native search: 14 MB of text took 45 ms, now 1.
   */
  feed(bytes: Uint8Array, from: number, to: number): MessageRefusal | null {
    let depth = this.depth;
    let inString = this.inString;
    let escaped = this.escaped;
    let inName = this.inName;
    let nameNext = this.nameNext;
    let hash = this.hash;
    let run = 0;
    let i = from;
    let refused: MessageRefusal | null = null;
    while (i < to) {
      if (escaped) {
        // The byte after a backslash, which a chunk's end put off to here.
        escaped = false;
        if (inName) hash = Math.imul(hash ^ bytes[i], 16777619);
        i++;
        continue;
      }
      const c = bytes[i++];
      if (inName) {
        // Every byte of a name, escapes as written (two spellings of one name count twice: sooner refused, never later).
        if (c === 0x22 /* " */) {
          inName = inString = false;
          const name = finalHash(hash);
          // Records repeat their names: most are found in this small table, not looked up in the Set.
          if (this.recent[name & RECENT_MASK] !== name) {
            this.recent[name & RECENT_MASK] = name;
            this.names.add(name);
            if (this.names.size > this.maxKeys) {
              refused = 'keys';
              break;
            }
          }
        } else {
          hash = Math.imul(hash ^ c, 16777619);
          if (c === 0x5c /* \ */) {
            if (i < to) hash = Math.imul(hash ^ bytes[i++], 16777619);
            else escaped = true;
          }
        }
      } else if (inString) {
        if (c === 0x5c /* \ */) {
          // What it escapes is skipped with it (or, past the chunk's end, at the next one's start).
          if (i < to) i++;
          else escaped = true;
          run = 0;
        } else if (c === 0x22 /* " */) inString = false;
        else if (++run > SHORT_RUN) {
          i = Math.min(to, this.next.of(bytes).quoteOrBackslashFrom(i));
          run = 0;
        }
      } else if (c === 0x22) {
        inString = true;
        inName = nameNext;
        nameNext = false;
        hash = KEY_SEED;
        run = 0;
      } else if (c === 0x7b /* { */ || c === 0x5b /* [ */) {
        if (++depth > this.maxDepth) {
          refused = 'depth';
          break;
        }
        this.objectAt[depth] = c === 0x7b ? 1 : 0;
        nameNext = c === 0x7b;
      } else if (c === 0x2c /* , */) nameNext = this.objectAt[depth] === 1;
      else if (c !== 0x20 && c !== 0x0a && c !== 0x0d && c !== 0x09) {
        // A value, a colon or a closing bracket: no name comes next.
        nameNext = false;
        if ((c === 0x7d /* } */ || c === 0x5d) /* ] */ && depth > 0) depth--;
      }
    }
    this.depth = depth;
    this.inString = inString;
    this.escaped = escaped;
    this.inName = inName;
    this.nameNext = nameNext;
    this.hash = hash;
    return refused;
  }

  private readonly next = new NextByte();

  /** A new chunk begins: what was found in the last one is not looked at again, even were its array reused. */
  newChunk(): void {
    this.next.forget();
  }

  reset(): void {
    this.depth = 0;
    this.inString = false;
    this.escaped = false;
    this.inName = false;
    this.nameNext = false;
    this.names.clear();
    this.recent.fill(-1);
  }
}

/**
 * Where a quote or a backslash is next in one chunk, each found by one native search and kept
 * until passed: searching afresh for every string would scan the chunk's rest again each time
 * (a chunk of short strings, or of lines that each open a string, would cost its length squared).
 */
/** FNV-1a's state, mixed (MurmurHash3's finalizer) so every bit of it reaches the 30 kept. */
function finalHash(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h & 0x3fffffff;
}

class NextByte {
  private bytes?: Uint8Array;
  private quote = -1;
  private backslash = -1;

  forget(): void {
    this.bytes = undefined;
  }

  of(bytes: Uint8Array): this {
    if (this.bytes !== bytes) {
      this.bytes = bytes;
      this.quote = this.backslash = -1;
    }
    return this;
  }

  /**
   * The next quote or backslash at or after `from` in the chunk; the chunk's length when there is
   * none. Always a small integer: an Infinity once made the scan's index a double, and every later
   * scan ran at half speed.
   */
  quoteOrBackslashFrom(from: number): number {
    if (this.quote < from) this.quote = this.search(0x22 /* " */, from);
    if (this.backslash < from) this.backslash = this.search(0x5c /* \ */, from);
    return Math.min(this.quote, this.backslash);
  }

  private search(byte: number, from: number): number {
    const at = this.bytes!.indexOf(byte, from);
    return at < 0 ? this.bytes!.length : at;
  }
}

const DATA = [0x64, 0x61, 0x74, 0x61]; // "data"

/**
 * The same over an event stream: only `data` lines are JSON (an `id:` or a comment may hold any
 * bracket), the lines of one event are one message, and an empty line ends it. Lines end with
 * CR LF, LF or CR, as the event stream format allows.
 */
class EventStreamNesting {
  /** Bytes of the current line's field name seen so far; -1 once the line is known not to be `data`, -2 once it is. */
  private field = 0;
  private lineEmpty = true;
  private afterCr = false;

  constructor(private readonly json: JsonNesting) {}

  feed(bytes: Uint8Array): MessageRefusal | null {
    this.json.newChunk();
    for (let i = 0; i < bytes.length; i++) {
      const c = bytes[i];
      if (c === 0x0a /* LF */ || c === 0x0d /* CR */) {
        if (c === 0x0a && this.afterCr) {
          this.afterCr = false;
          continue;
        }
        this.afterCr = c === 0x0d;
        if (this.lineEmpty) this.json.reset();
        this.field = 0;
        this.lineEmpty = true;
        continue;
      }
      this.afterCr = false;
      this.lineEmpty = false;
      if (this.field === -2) {
        // The rest of a data line up to its end: scanned in one go.
        let end = i;
        while (end < bytes.length && bytes[end] !== 0x0a && bytes[end] !== 0x0d) end++;
        const refused = this.json.feed(bytes, i, end);
        if (refused !== null) return refused;
        i = end - 1;
      } else if (this.field >= 0) {
        if (this.field < DATA.length) this.field = c === DATA[this.field] ? this.field + 1 : -1;
        else this.field = c === 0x3a /* : */ ? -2 : -1;
      }
    }
    return null;
  }
}

/**
 * A reader of one answer's bytes: why the message it carries is refused unparsed (nested deeper
 * than MAX_MESSAGE_DEPTH, or naming more than MAX_MESSAGE_KEYS distinct members), null while it is not.
 */
export type MessageCheck = (bytes: Uint8Array) => MessageRefusal | null;

export function messageCheck(eventStream: boolean, maxDepth = MAX_MESSAGE_DEPTH, maxKeys = MAX_MESSAGE_KEYS): MessageCheck {
  const json = new JsonNesting(maxDepth, maxKeys);
  if (eventStream) {
    const events = new EventStreamNesting(json);
    return (bytes) => events.feed(bytes);
  }
  return (bytes) => {
    json.newChunk();
    return json.feed(bytes, 0, bytes.length);
  };
}

/** The same over one whole text: why it is refused, null when it is not. */
export function jsonShapeRefusal(text: string | Uint8Array, maxDepth: number, maxKeys: number): MessageRefusal | null {
  const bytes = typeof text === 'string' ? Buffer.from(text, 'utf8') : text;
  return new JsonNesting(maxDepth, maxKeys).feed(bytes, 0, bytes.length);
}

/** Whether a text is long enough to name more than `maxKeys` distinct members: each takes at least four bytes (`"a":0,` less its value). */
export function mayNameMoreThan(text: string | Uint8Array, maxKeys: number): boolean {
  return text.length >= 4 * maxKeys;
}
