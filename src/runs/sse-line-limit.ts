/**
 * The most bytes of one line of a provider's event stream. A chunk of a real stream is a few
 * hundred bytes; 4 MiB holds an answer of MAX_ANSWER_CHARS sent whole in one chunk, JSON-escaped.
 */
export const MAX_SSE_LINE_BYTES = 4 * 1024 * 1024;

const LF = 0x0a;
const CR = 0x0d;

/**
 * The response with its event stream cut off, with `tooLong()`'s error, as soon as a line grows past
 * `maxLineBytes`, and handed on in whole lines only. The OpenAI client's line decoder joins and
 * rescans everything it holds since the last line break on every chunk: a 16 MB line cost 6.4 s of
 * blocking CPU, and sixty lines of 3.9 MB (each within the bound) 25 s. Given whole lines it holds
 * nothing between chunks, so decoding is linear; the part of a line not yet ended waits here.
 * Other responses are answered as they are.
 */
export function limitSseLines(res: Response, tooLong: (maxLineBytes: number) => Error, maxLineBytes = MAX_SSE_LINE_BYTES): Response {
  if (!res.body || !(res.headers.get('content-type') ?? '').toLowerCase().includes('text/event-stream')) return res;
  let held: Uint8Array[] = [];
  let heldBytes = 0;
  const guard = new TransformStream<Uint8Array, Uint8Array>({
    transform(chunk, controller) {
      // Each search moves forward only: linear in the chunk however many lines it holds.
      let nextLf = chunk.indexOf(LF);
      let nextCr = chunk.indexOf(CR);
      let start = 0;
      let run = heldBytes;
      let lastBreak = -1;
      for (;;) {
        const end = nextLf < 0 ? nextCr : nextCr < 0 ? nextLf : Math.min(nextLf, nextCr);
        if (run + (end < 0 ? chunk.length : end) - start > maxLineBytes) {
          controller.error(tooLong(maxLineBytes));
          return;
        }
        if (end < 0) break;
        lastBreak = end;
        run = 0;
        start = end + 1;
        if (nextLf === end) nextLf = chunk.indexOf(LF, start);
        if (nextCr === end) nextCr = chunk.indexOf(CR, start);
      }
      if (lastBreak < 0) {
        held.push(chunk);
        heldBytes += chunk.length;
        return;
      }
      const lines = chunk.subarray(0, lastBreak + 1);
      controller.enqueue(held.length === 0 ? lines : concat([...held, lines], heldBytes + lines.length));
      held = lastBreak + 1 < chunk.length ? [chunk.subarray(lastBreak + 1)] : [];
      heldBytes = chunk.length - lastBreak - 1;
    },
    flush(controller) {
      if (heldBytes > 0) controller.enqueue(concat(held, heldBytes));
    },
  });
  return new Response(res.body.pipeThrough(guard), { status: res.status, statusText: res.statusText, headers: res.headers });
}

function concat(parts: Uint8Array[], bytes: number): Uint8Array {
  const out = new Uint8Array(bytes);
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}
