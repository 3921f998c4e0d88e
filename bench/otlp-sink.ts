import { createServer } from 'node:http';
import { AddressInfo } from 'node:net';
import { setPriority } from 'node:os';
import { gunzipSync } from 'node:zlib';

/**
 * A loopback OTLP/HTTP receiver that accepts every export and discards it, for measuring what
 * tracing "on and exporting" costs the server without a real collector's CPU in the figure:
 *
 *   node -r @swc-node/register bench/otlp-sink.ts 4318
 *   npm run bench:compare -- --only=tool-call --b-env=OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318
 *
 * It counts what it received (exports, bytes, spans, spans by name), so a ratio measured against it
 * can be checked to have exported every call's spans: `GET /stats` answers the counts as JSON
 * (`DELETE /stats` zeroes them), and they are printed every 10 s while spans arrive and when the
 * process stops (SIGINT, SIGTERM). Exports are decoded when the counts are asked for, not as they
 * arrive: a collector on another machine costs the node nothing while it serves.
 */
const port = Number(process.argv[2] ?? process.env.PORT ?? 4318);
// Counting means decoding every export (about 0.03 ms of CPU per traced call, measured). It is
// done when the counts are asked for (after a run) and, at the lowest priority, only when the
// exports waiting for it pass MAX_UNDECODED bytes; receiving costs the machine little.
try {
  setPriority(19);
} catch {
  // Not allowed here: the figure then includes the sink's decoding, as before.
}
const stats = { exports: 0, bytes: 0, spans: 0, undecoded: 0, byName: {} as Record<string, number> };
/** Exports received and not decoded yet, with the headers that say how to read them. */
let waiting: { raw: Buffer; gzip: boolean; json: boolean }[] = [];
let waitingBytes = 0;
const MAX_UNDECODED = 256 << 20;

/** Span names are bounded (route templates, tool names, `pg.query:<verb> <db>`), so they can be counted by name. */
function counted(name: string): void {
  stats.byName[name] = (stats.byName[name] ?? 0) + 1;
}

/** Reads a protobuf varint at `at`; answers the value and the offset after it. */
function varint(buf: Buffer, at: number): [number, number] {
  let value = 0;
  let shift = 0;
  for (;;) {
    const byte = buf[at++];
    value += (byte & 0x7f) * 2 ** shift;
    if (byte < 0x80) return [value, at];
    shift += 7;
  }
}

/** The length-delimited fields numbered `field` of one protobuf message. */
function* fields(buf: Buffer, field: number): Generator<Buffer> {
  let at = 0;
  while (at < buf.length) {
    const [key, next] = varint(buf, at);
    at = next;
    const wire = key & 7;
    if (wire === 0) at = varint(buf, at)[1];
    else if (wire === 1) at += 8;
    else if (wire === 5) at += 4;
    else if (wire === 2) {
      const [len, start] = varint(buf, at);
      if (key >>> 3 === field) yield buf.subarray(start, start + len);
      at = start + len;
    } else throw new Error(`unsupported wire type ${wire}`);
  }
}

/** ExportTraceServiceRequest.resource_spans(1) -> ResourceSpans.scope_spans(2) -> ScopeSpans.spans(2) -> Span.name(5). */
function countProtobuf(body: Buffer): number {
  let n = 0;
  for (const rs of fields(body, 1))
    for (const ss of fields(rs, 2))
      for (const span of fields(ss, 2)) {
        n++;
        for (const name of fields(span, 5)) counted(name.toString('utf8'));
      }
  return n;
}

function countJson(body: Buffer): number {
  const doc = JSON.parse(body.toString('utf8')) as { resourceSpans?: { scopeSpans?: { spans?: { name: string }[] }[] }[] };
  let n = 0;
  for (const rs of doc.resourceSpans ?? [])
    for (const ss of rs.scopeSpans ?? [])
      for (const span of ss.spans ?? []) {
        n++;
        counted(span.name);
      }
  return n;
}

function count(e: { raw: Buffer; gzip: boolean; json: boolean }): number {
  const body = e.gzip ? gunzipSync(e.raw) : e.raw;
  return e.json ? countJson(body) : countProtobuf(body);
}

/** Decodes and counts every export received so far. */
function decodeWaiting(): void {
  const todo = waiting;
  waiting = [];
  waitingBytes = 0;
  for (const e of todo) {
    try {
      stats.spans += count(e);
    } catch {
      stats.undecoded++;
    }
  }
}

let printed = '';
const print = () => {
  decodeWaiting();
  const line = JSON.stringify(stats);
  if (line !== printed) process.stdout.write(`otlp-sink ${new Date().toISOString()} ${line}\n`);
  printed = line;
};

const server = createServer((req, res) => {
  if (req.method === 'DELETE' && req.url === '/stats') {
    waiting = [];
    waitingBytes = 0;
    Object.assign(stats, { exports: 0, bytes: 0, spans: 0, undecoded: 0, byName: {} });
    res.writeHead(204).end();
    return;
  }
  if (req.method === 'GET' && req.url === '/stats') {
    decodeWaiting();
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(stats));
    return;
  }
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    if (req.method === 'POST' && req.url === '/v1/traces') {
      const raw = Buffer.concat(chunks);
      stats.exports++;
      stats.bytes += raw.length;
      waiting.push({ raw, gzip: req.headers['content-encoding'] === 'gzip', json: String(req.headers['content-type']).includes('json') });
      waitingBytes += raw.length;
      if (waitingBytes > MAX_UNDECODED) decodeWaiting();
    }
    // An empty ExportTraceServiceResponse is an empty body in protobuf and `{}` in JSON.
    const json = String(req.headers['content-type']).includes('json');
    res.writeHead(200, { 'content-type': json ? 'application/json' : 'application/x-protobuf' }).end(json ? '{}' : '');
  });
});

server.listen(port, '127.0.0.1', () => {
  process.stdout.write(`otlp-sink listening on http://127.0.0.1:${(server.address() as AddressInfo).port}\n`);
});
// The counts are printed every 10 s only while nothing arrives (a run is over), so printing decodes
// nothing while a run is measured.
let lastExports = -1;
setInterval(() => {
  if (stats.exports === lastExports) print();
  lastExports = stats.exports;
}, 10_000).unref();
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    print();
    process.exit(0);
  });
}
