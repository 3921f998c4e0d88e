/**
 * Reads an OTLP/protobuf `ExportTraceServiceRequest` into the shape OTLP/JSON gives it, for the
 * fields tests look at: a collector that tests play, for the protocol operators get by default.
 * Hand-written on purpose: it must not share code with the product's encoder it checks.
 */
export interface DecodedSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  /** The instrumentation that made it (from the export's scope). */
  scope?: string;
  /** Absent from OTLP/JSON when a span has none. */
  attributes?: { key: string; value: Record<string, unknown> }[];
}

interface Field {
  no: number;
  wire: number;
  /** The varint's value (wire 0), or the bytes (wire 1, 2, 5). */
  int: bigint;
  bytes: Buffer;
}

function varint(buf: Buffer, at: number): [bigint, number] {
  let value = 0n;
  let shift = 0n;
  for (;;) {
    if (at >= buf.length) throw new Error('protobuf: truncated varint');
    const byte = buf[at++];
    value |= BigInt(byte & 0x7f) << shift;
    if (byte < 0x80) return [value, at];
    shift += 7n;
  }
}

function fields(buf: Buffer): Field[] {
  const out: Field[] = [];
  let at = 0;
  while (at < buf.length) {
    const [key, next] = varint(buf, at);
    at = next;
    const no = Number(key >> 3n);
    const wire = Number(key & 7n);
    if (wire === 0) {
      const [int, after] = varint(buf, at);
      out.push({ no, wire, int, bytes: Buffer.alloc(0) });
      at = after;
    } else {
      let len: number;
      if (wire === 1) len = 8;
      else if (wire === 5) len = 4;
      else if (wire === 2) {
        const [l, start] = varint(buf, at);
        len = Number(l);
        at = start;
      } else throw new Error(`protobuf: wire type ${wire}`);
      if (at + len > buf.length) throw new Error('protobuf: truncated field');
      out.push({ no, wire, int: 0n, bytes: buf.subarray(at, at + len) });
      at += len;
    }
  }
  return out;
}

function anyValue(buf: Buffer): Record<string, unknown> {
  const f = fields(buf)[0];
  if (!f) return {};
  switch (f.no) {
    case 1:
      return { stringValue: f.bytes.toString('utf8') };
    case 2:
      return { boolValue: f.int !== 0n };
    case 3:
      return { intValue: String(BigInt.asIntN(64, f.int)) };
    case 4:
      return { doubleValue: f.bytes.readDoubleLE(0) };
    case 5:
      return { arrayValue: { values: fields(f.bytes).map((v) => anyValue(v.bytes)) } };
    default:
      return { [`field${f.no}`]: f.bytes.toString('hex') };
  }
}

function keyValue(buf: Buffer): { key: string; value: Record<string, unknown> } {
  const fs = fields(buf);
  return { key: fs.find((f) => f.no === 1)?.bytes.toString('utf8') ?? '', value: anyValue(fs.find((f) => f.no === 2)?.bytes ?? Buffer.alloc(0)) };
}

export function decodeTraceExportRequest(body: Buffer): DecodedSpan[] {
  const spans: DecodedSpan[] = [];
  for (const rs of fields(body).filter((f) => f.no === 1))
    for (const ss of fields(rs.bytes).filter((f) => f.no === 2)) {
      const parts = fields(ss.bytes);
      const scopeMsg = parts.find((f) => f.no === 1);
      const scope = scopeMsg
        ? fields(scopeMsg.bytes)
            .find((f) => f.no === 1)
            ?.bytes.toString('utf8')
        : undefined;
      for (const s of parts.filter((f) => f.no === 2)) {
        const fs = fields(s.bytes);
        const one = (no: number) => fs.find((f) => f.no === no);
        const parent = one(4)?.bytes.toString('hex');
        spans.push({
          traceId: one(1)?.bytes.toString('hex') ?? '',
          spanId: one(2)?.bytes.toString('hex') ?? '',
          ...(parent ? { parentSpanId: parent } : {}),
          name: one(5)?.bytes.toString('utf8') ?? '',
          kind: Number(one(6)?.int ?? 0n),
          scope,
          attributes: fs.filter((f) => f.no === 9).map((f) => keyValue(f.bytes)),
        });
      }
    }
  return spans;
}
