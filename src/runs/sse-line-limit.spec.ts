import { SseLines } from './sse-line-limit';

const enc = new TextEncoder();
const dec = new TextDecoder();
const refuse = (reason: string) => new Error(`refused: ${reason}`);

/** What comes out of the check, piece by piece, for these pieces in. */
function through(pieces: string[], limits = { maxLineBytes: 14, maxLines: 100 }): string[] {
  const lines = new SseLines(refuse, limits);
  return pieces.map((p) => dec.decode(lines.take(enc.encode(p))));
}

describe('SseLines', () => {
  it('passes a stream whose lines stay within the bound, whatever the pieces, its line breaks made LF', () => {
    const out = through(['data: 12', '345\r\n\r\ndata: 1', '234567\n\n', 'data: x\rdata: y\r', '\r', '\ndata: z\r', '\n']);
    expect(out).toEqual(['data: 12', '345\n\ndata: 1', '234567\n\n', 'data: x\ndata: y\n', '\n', 'data: z\n', '']);
  });

  it('fails the stream once one line grows past the bound: across pieces, or within one', () => {
    expect(() => through(['data: ok\n\ndata: 1', '2345678', '9'])).toThrow('refused: a line longer than 14 bytes');
    expect(() => through(['data: ok\ndata: 123456789\n'])).toThrow('refused: a line longer than 14 bytes');
    expect(() => through(['data: 12345678', '\r\ndata: 12345678\r', '\n'])).not.toThrow();
  });

  it('fails the stream past its lines, however short (blank lines, comments, CRs); a CRLF is one line', () => {
    const limits = { maxLineBytes: 14, maxLines: 6 };
    expect(through(['data: 1\r\n\r\n', 'data: 2\r', '\n\r\n', ':\r\n\r\n'], limits).join('')).toBe('data: 1\n\ndata: 2\n\n:\n\n');
    expect(() => through(['\n\n\n', '\n\n\n\n'], limits)).toThrow('refused: more than 6 lines');
    expect(() => through([':\r'.repeat(7)], limits)).toThrow('refused: more than 6 lines');
  });
});
