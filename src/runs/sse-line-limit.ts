/**
 * The most bytes of one line of a provider's event stream. The OpenAI client's line decoder joins
 * and rescans everything it holds since the last line break on every chunk: a 16 MB line cost 6.4 s
 * of blocking CPU, the node answering nobody meanwhile. A chunk of a real stream is a few hundred
 * bytes; 4 MiB holds an answer of MAX_ANSWER_CHARS sent whole in one chunk, JSON-escaped.
 */
export const MAX_SSE_LINE_BYTES = 4 * 1024 * 1024;

const LF = 0x0a;
const CR = 0x0d;

/**
 * The response with its event stream cut off, with `tooLong()`'s error, as soon as a line grows past
 * `maxLineBytes`, before the client's decoder sees it. Other responses are answered as they are.
 */
export function limitSseLines(res: Response, tooLong: (maxLineBytes: number) => Error, maxLineBytes = MAX_SSE_LINE_BYTES): Response {
  if (!res.body || !(res.headers.get('content-type') ?? '').toLowerCase().includes('text/event-stream')) return res;
  let sinceBreak = 0;
  const guard = new TransformStream<Uint8Array, Uint8Array>({
    transform(chunk, controller) {
      let start = 0;
      for (;;) {
        const lf = chunk.indexOf(LF, start);
        const cr = chunk.indexOf(CR, start);
        const end = lf < 0 ? cr : cr < 0 ? lf : Math.min(lf, cr);
        const length = sinceBreak + (end < 0 ? chunk.length : end) - start;
        if (length > maxLineBytes) {
          controller.error(tooLong(maxLineBytes));
          return;
        }
        if (end < 0) {
          sinceBreak = length;
          break;
        }
        sinceBreak = 0;
        start = end + 1;
      }
      controller.enqueue(chunk);
    },
  });
  return new Response(res.body.pipeThrough(guard), { status: res.status, statusText: res.statusText, headers: res.headers });
}
