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
 * Counts brackets in JSON text as it arrives, bytes at a time, without parsing it: what a
 * parser's recursion would reach. Brackets, quotes and backslashes are ASCII, and no byte of a
 * multi-byte UTF-8 character is, so bytes can be read as they come, cut anywhere.
 */
class JsonNesting {
  private depth = 0;
  private inString = false;
  private escaped = false;

  /** False once a message nests deeper than `max`. */
  feed(bytes: Uint8Array, from: number, to: number, max: number): boolean {
    for (let i = from; i < to; i++) {
      const c = bytes[i];
      if (this.inString) {
        if (this.escaped) this.escaped = false;
        else if (c === 0x5c /* \ */) this.escaped = true;
        else if (c === 0x22 /* " */) this.inString = false;
      } else if (c === 0x22) {
        this.inString = true;
      } else if (c === 0x7b /* { */ || c === 0x5b /* [ */) {
        if (++this.depth > max) return false;
      } else if (c === 0x7d /* } */ || c === 0x5d /* ] */) {
        this.depth = Math.max(0, this.depth - 1);
      }
    }
    return true;
  }

  reset(): void {
    this.depth = 0;
    this.inString = false;
    this.escaped = false;
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
  return (bytes) => json.feed(bytes, 0, bytes.length, max);
}
