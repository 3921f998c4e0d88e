import OpenAI from 'openai';
import { BYTES_PER_TURN, CHUNKS_PER_TURN, completionChunks, MAX_CHUNK_MEMBERS } from './model-stream';

const enc = new TextEncoder();

/** A body the provider sent faster than it is parsed: every piece already there, read in microtasks alone. */
function streamed(pieces: Iterable<string>, contentType = 'text/event-stream') {
  const it = pieces[Symbol.iterator]();
  const seen = { pulled: 0, cancelled: false };
  const body = new ReadableStream<Uint8Array>({
    pull(c) {
      const next = it.next();
      if (next.done) return c.close();
      seen.pulled++;
      c.enqueue(enc.encode(next.value));
    },
    cancel() {
      seen.cancelled = true;
    },
  });
  return { response: new Response(body, { headers: { 'content-type': contentType } }), seen };
}

const event = (o: unknown) => `data: ${JSON.stringify(o)}\n\n`;

async function all<T>(it: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const x of it) out.push(x);
  return out;
}

describe('completionChunks', () => {
  it('parses the data events up to [DONE] and reads no further: the rest of the body is cancelled', async () => {
    function* pieces() {
      yield ': keep-alive\n\nid: 1\nevent: chunk\ndata: {"n":1}\n\n';
      yield 'data: {"n":\ndata: 2}\r\n\r\nretry: x\nodd: field\n\n';
      yield 'data: [DONE]\n\n';
      for (;;) yield event({ n: 'after' });
    }
    const { response, seen } = streamed(pieces());
    expect(await all(completionChunks(response))).toEqual([{ n: 1 }, { n: 2 }]);
    expect(seen.cancelled).toBe(true);
    expect(seen.pulled).toBeLessThan(10);
  });

  it('refuses a chunk of more object members than a real one holds, unparsed (attack round 15, R-F5: a 4 MiB line of 358,000 names held the event loop a second)', async () => {
    const names = Array.from({ length: MAX_CHUNK_MEMBERS + 1 }, (_, i) => `"made-up-name-${i}":0`).join(',');
    const padded = streamed([`data: {"choices":[{"index":0,"delta":{"content":"a"}}],${names}}\n\n`, 'data: [DONE]\n\n']);
    await expect(all(completionChunks(padded.response))).rejects.toMatchObject({
      code: 'model_error',
      retryable: false,
      message: `The provider streamed a chunk of more than ${MAX_CHUNK_MEMBERS} object members; the answer was not read.`,
    });
    // A whole answer in one chunk is one string, however long, and what it holds is not counted.
    const content = '{"a":1,'.repeat(40_000);
    const whole = streamed([event({ choices: [{ index: 0, delta: { content } }] }), 'data: [DONE]\n\n']);
    expect((await all(completionChunks(whole.response))).length).toBe(1);
  });

  it("an event carrying the provider's error is that error; one that is not JSON fails the stream", async () => {
    const failing = completionChunks(streamed([event({ error: { message: 'overloaded', code: 'busy' } })]).response);
    await expect(all(failing)).rejects.toMatchObject({ constructor: OpenAI.APIError, message: 'overloaded', code: 'busy' });
    await expect(all(completionChunks(streamed(['data: {nope\n\n']).response))).rejects.toBeInstanceOf(SyntaxError);
  });

  it('bounds what any successful body holds, whatever its content type: a long line, an event of many lines, too many lines', async () => {
    const limits = { maxLineBytes: 64, maxLines: 1000 };
    const refused = (reason: string) => ({ code: 'model_error', retryable: false, message: `The provider streamed ${reason}; the answer was not read.` });
    const longLine = streamed(['data: "', 'x'.repeat(100), '"\n\n'], 'text/plain');
    await expect(all(completionChunks(longLine.response, limits))).rejects.toMatchObject(refused('a line longer than 64 bytes'));
    const manyDataLines = streamed(['data: xxxx\n'.repeat(40)], 'application/json');
    await expect(all(completionChunks(manyDataLines.response, limits))).rejects.toMatchObject(refused('an event longer than 64 characters'));
    function* blankLines() {
      for (;;) yield* ['\n'.repeat(300), '\r'.repeat(300), ':\r\n'.repeat(300)];
    }
    const blank = streamed(blankLines());
    await expect(all(completionChunks(blank.response, limits))).rejects.toMatchObject(refused('more than 1000 lines'));
    await new Promise(setImmediate);
    // The fourth piece passes the bound; the body had one more ready.
    expect(blank.seen.cancelled).toBe(true);
    expect(blank.seen.pulled).toBeLessThanOrEqual(5);
  });

  it('a burst already received is read in turns of the event loop: work queued before it runs long before its end', async () => {
    const total = 20 * CHUNKS_PER_TURN;
    const { response } = streamed([Array.from({ length: total }, (_, i) => event({ i })).join('')]);
    let handed = 0;
    let handedWhenOtherWorkRan = -1;
    setImmediate(() => (handedWhenOtherWorkRan = handed));
    for await (const chunk of completionChunks(response)) expect(chunk).toEqual({ i: handed++ });
    expect(handed).toBe(total);
    expect(handedWhenOtherWorkRan).toBe(CHUNKS_PER_TURN);
  });

  it('so is a burst of lines that make no chunk, in one piece of the body: a turn every BYTES_PER_TURN of it', async () => {
    const comments = ': keep-alive\n'.repeat(Math.ceil(BYTES_PER_TURN / 13));
    const events = 40;
    const { response, seen } = streamed([Array.from({ length: events }, (_, i) => comments + event({ i })).join('')]);
    let handed = 0;
    let handedWhenOtherWorkRan = -1;
    setImmediate(() => (handedWhenOtherWorkRan = handed));
    for await (const chunk of completionChunks(response)) expect(chunk).toEqual({ i: handed++ });
    expect([handed, seen.pulled]).toEqual([events, 1]);
    // Turns every CHUNKS_PER_TURN chunks alone would have let it run after 16.
    expect(handedWhenOtherWorkRan).toBeGreaterThanOrEqual(0);
    expect(handedWhenOtherWorkRan).toBeLessThan(3);
  });
});
