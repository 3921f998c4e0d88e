import { limitSseLines } from './sse-line-limit';

const enc = new TextEncoder();
const sse = (...parts: (string | Uint8Array)[]) =>
  new Response(
    new ReadableStream<Uint8Array>({
      start(c) {
        for (const p of parts) c.enqueue(typeof p === 'string' ? enc.encode(p) : p);
        c.close();
      },
    }),
    { headers: { 'content-type': 'text/event-stream; charset=utf-8' } },
  );
const tooLong = (max: number) => new Error(`line past ${max}`);

describe('limitSseLines', () => {
  it('passes a stream whose lines stay within the bound, whatever the chunking and line breaks', async () => {
    const res = limitSseLines(sse('data: 12', '345\r\n\r\ndata: 1', '234567\n\n', 'data: x\rdata: y\n\n'), tooLong, 14);
    expect(await res.text()).toBe('data: 12345\r\n\r\ndata: 1234567\n\ndata: x\rdata: y\n\n');
  });

  it('fails the stream once one line grows past the bound: across chunks, or within one', async () => {
    await expect(limitSseLines(sse('data: ok\n\ndata: 1', '2345678', '9'), tooLong, 14).text()).rejects.toThrow('line past 14');
    await expect(limitSseLines(sse('data: ok\ndata: 123456789\n'), tooLong, 14).text()).rejects.toThrow('line past 14');
  });

  it('hands on whole lines only: a line split across chunks comes out in one chunk, with what is left at the end', async () => {
    const res = limitSseLines(sse('data: 1', '23', '4\n\ndata: 5', '\n', 'da', 'ta: 6\r', '\ndata: 7'), tooLong, 14);
    const chunks: string[] = [];
    const dec = new TextDecoder();
    for await (const c of res.body as unknown as AsyncIterable<Uint8Array>) chunks.push(dec.decode(c));
    expect(chunks).toEqual(['data: 1234\n\n', 'data: 5\n', 'data: 6\r', '\n', 'data: 7']);
  });

  it('answers other responses as they are', async () => {
    const json = new Response('x'.repeat(100), { headers: { 'content-type': 'application/json' } });
    expect(limitSseLines(json, tooLong, 14)).toBe(json);
  });
});
