/**
 * The deepest an MCP server's message may nest. The SDK checks each message against its schemas by
 * recursion, a dozen stack frames a level: a tool list nested 1,600 deep overflowed the stack and
 * the connection was refused as "could not be reached: Maximum call stack size exceeded"; one bound now
 * holds for every message, results included (the product's own walks of a result, its redaction
 * and its output budget, recurse too). Twice the depth a request body may have (MAX_JSON_DEPTH); a tool's input schema is
 * held to 32 (mcp-tools.ts).
 */
export const MAX_MESSAGE_DEPTH = 128;

/** Bytes of a string read one at a time before the rest is searched for natively: most strings of JSON are shorter. */
const SHORT_RUN = 64;

/**
 * Counts brackets in JSON text as it arrives, bytes at a time, without parsing it: what a
 * parser's recursion would reach. Brackets, quotes and backslashes are ASCII, and no byte of a
 * multi-byte UTF-8 character is, so bytes can be read as they come, cut anywhere.
 */
class JsonNesting {
  private depth = 0;
  private inString = false;
  private escaped = false;

  /**
   * False once a message nests deeper than `max`. A byte at a time, its state in locals while the
   * loop runs; past SHORT_RUN bytes of a string without a quote or backslash, the rest up to the
   * next one is skipped by the array's native search: 14 MB of text took 45 ms, now 1.
   */
  feed(bytes: Uint8Array, from: number, to: number, max: number): boolean {
    let depth = this.depth;
    let inString = this.inString;
    let escaped = this.escaped;
    let run = 0;
    let i = from;
    while (i < to) {
      if (escaped) {
        // The byte after a backslash, which a chunk's end put off to here.
        escaped = false;
        i++;
        continue;
      }
      const c = bytes[i++];
      if (inString) {
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
        run = 0;
      } else if (c === 0x7b /* { */ || c === 0x5b /* [ */) {
        if (++depth > max) {
          this.depth = depth;
          return false;
        }
      } else if ((c === 0x7d /* } */ || c === 0x5d) /* ] */ && depth > 0) depth--;
    }
    this.depth = depth;
    this.inString = inString;
    this.escaped = escaped;
    return true;
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
  }
}

/**
 * Where a quote or a backslash is next in one chunk, each found by one native search and kept
 * until passed: searching afresh for every string would scan the chunk's rest again each time
 * (a chunk of short strings, or of lines that each open a string, would cost its length squared).
 */
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
  private readonly json = new JsonNesting();
  /** Bytes of the current line's field name seen so far; -1 once the line is known not to be `data`, -2 once it is. */
  private field = 0;
  private lineEmpty = true;
  private afterCr = false;

  feed(bytes: Uint8Array, max: number): boolean {
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
        if (!this.json.feed(bytes, i, end, max)) return false;
        i = end - 1;
      } else if (this.field >= 0) {
        if (this.field < DATA.length) this.field = c === DATA[this.field] ? this.field + 1 : -1;
        else this.field = c === 0x3a /* : */ ? -2 : -1;
      }
    }
    return true;
  }
}

/** A reader of one answer's bytes: false once the message it carries nests deeper than MAX_MESSAGE_DEPTH. */
export type NestingCheck = (bytes: Uint8Array) => boolean;

export function nestingCheck(eventStream: boolean, max = MAX_MESSAGE_DEPTH): NestingCheck {
  if (eventStream) {
    const events = new EventStreamNesting();
    return (bytes) => events.feed(bytes, max);
  }
  const json = new JsonNesting();
  return (bytes) => {
    json.newChunk();
    return json.feed(bytes, 0, bytes.length, max);
  };
}
