import { MAX_CHUNKS_PER_ANSWER } from './model-answer';

/**
 * The most bytes of one line of a provider's event stream. A chunk of a real stream is a few
 * hundred bytes; 4 MiB holds an answer of MAX_ANSWER_CHARS sent whole in one chunk, JSON-escaped.
 */
export const MAX_SSE_LINE_BYTES = 4 * 1024 * 1024;

/**
 * The most lines of one provider's event stream: four for each of MAX_CHUNKS_PER_ANSWER chunks (its
 * `data:` line, the blank line ending it, and room for `event:` or `id:` lines and keep-alive
 * comments). Lines that make no chunk (blank lines, comments, other fields) are counted by no cap
 * on chunks, and each costs the parser; past this, a stream of them is cut off.
 */
export const MAX_SSE_LINES = 4 * MAX_CHUNKS_PER_ANSWER;

const LF = 0x0a;
const CR = 0x0d;

export interface SseLineLimits {
  maxLineBytes: number;
  maxLines: number;
}

/**
 * A provider's event stream checked as it comes: `take` answers a piece of it with each line break
 * an LF, and throws `refuse`'s error (given what went past its bound: "a line longer than N bytes")
 * as soon as a line grows past `maxLineBytes` or the lines pass `maxLines`, before the parser holds
 * any more of it. CRLF and a lone CR become LF: the event parser (eventsource-parser) rescans the
 * rest of its input for an LF at every CR, 36 ms for 64 KiB of them.
 */
export class SseLines {
  /** Bytes of the line not yet ended. */
  private run = 0;
  private lines = 0;
  /** The last piece ended in a CR: an LF starting the next one ends the same line. */
  private afterCr = false;

  constructor(
    private readonly refuse: (reason: string) => Error,
    private readonly limits: SseLineLimits = { maxLineBytes: MAX_SSE_LINE_BYTES, maxLines: MAX_SSE_LINES },
  ) {}

  take(piece: Uint8Array): Uint8Array {
    const { maxLineBytes, maxLines } = this.limits;
    if (piece.length === 0) return piece;
    // Each search moves forward only: linear in the piece however many lines it holds.
    let nextLf = piece.indexOf(LF);
    let nextCr = piece.indexOf(CR);
    const hasCr = nextCr >= 0;
    const skipLf = this.afterCr && piece[0] === LF;
    let start = 0;
    for (;;) {
      const end = nextLf < 0 ? nextCr : nextCr < 0 ? nextLf : Math.min(nextLf, nextCr);
      if (this.run + (end < 0 ? piece.length : end) - start > maxLineBytes) throw this.refuse(`a line longer than ${maxLineBytes} bytes`);
      if (end < 0) break;
      const secondOfCrLf = piece[end] === LF && (end === 0 ? this.afterCr : piece[end - 1] === CR);
      if (!secondOfCrLf && ++this.lines > maxLines) throw this.refuse(`more than ${maxLines} lines`);
      this.run = 0;
      start = end + 1;
      if (nextLf === end) nextLf = piece.indexOf(LF, start);
      if (nextCr === end) nextCr = piece.indexOf(CR, start);
    }
    this.run += piece.length - start;
    this.afterCr = piece[piece.length - 1] === CR;
    return hasCr ? lfLineBreaks(piece, skipLf) : skipLf ? piece.subarray(1) : piece;
  }
}

/** `bytes` with each CRLF and lone CR an LF; `skipLf`: its first byte is the LF of a CRLF whose CR ended the piece before. */
function lfLineBreaks(bytes: Uint8Array, skipLf: boolean): Uint8Array {
  const out = new Uint8Array(bytes.length);
  let n = 0;
  for (let i = skipLf ? 1 : 0; i < bytes.length; i++) {
    if (bytes[i] !== CR) {
      out[n++] = bytes[i];
      continue;
    }
    out[n++] = LF;
    if (bytes[i + 1] === LF) i++;
  }
  return out.subarray(0, n);
}
