import { Attributes } from '@opentelemetry/api';
import { BasicTracerProvider, InMemorySpanExporter, ReadableSpan, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { NATIVE_STRING_MIN, otlpTransformerModule, useNativeOtlpStrings } from './otlp-strings';

interface TraceSerializer {
  serializeRequest(spans: ReadableSpan[]): Uint8Array | undefined;
}
interface WriterClass {
  new (estimatedSize?: number): { writeString(s: string): void; finish(): Uint8Array };
  prototype: { writeString(s: string): void };
}

const serializer = otlpTransformerModule().ProtobufTraceSerializer as TraceSerializer;
const Writer = otlpTransformerModule('common/protobuf/protobuf-writer.js').ProtobufWriter as WriterClass;

/** Every kind of string a span carries, around each length the writer treats differently. */
const ascii = (n: number) => 'SELECT q.i, k.id FROM api_key k WHERE k.token_hash = $1 '.repeat(Math.ceil(n / 50)).slice(0, n);
const STRINGS: string[] = [
  '',
  'x',
  ascii(NATIVE_STRING_MIN - 1),
  ascii(NATIVE_STRING_MIN),
  ascii(127),
  ascii(128),
  ascii(1024),
  ascii(16383),
  ascii(16384),
  'é'.repeat(70), // two bytes each: 140 bytes, past one varint byte
  'Grüße aus Köln, 日本語のテキスト, emoji 😀🚀 and more text to pass the threshold',
  `${ascii(40)}\uD800${ascii(10)}`, // a lone high surrogate: U+FFFD, three bytes
  `${ascii(40)}\uDC00`, // a lone low surrogate at the end
  `${ascii(40)}\uD83D`, // a high surrogate cut off at the end
  '😀'.repeat(40),
];

function spansWith(strings: string[]): ReadableSpan[] {
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  const tracer = provider.getTracer('otlp-strings.spec');
  strings.forEach((value, i) => {
    const attributes: Attributes = { 'db.query.text': value, [`key.${value.slice(0, 30)}`]: i, list: [value, 'short'] };
    const span = tracer.startSpan(value || 'empty', { attributes });
    span.addEvent(value, { text: value });
    span.end();
  });
  return exporter.getFinishedSpans();
}

describe('OTLP/protobuf strings written natively', () => {
  const originalWrite = Writer.prototype.writeString;
  const spans = spansWith(STRINGS);
  const before = Buffer.from(serializer.serializeRequest(spans)!);

  beforeAll(() => {
    // The library's writer is found and replaced: a version that moved it shows here, not as a
    // silent loss of speed.
    expect(useNativeOtlpStrings()).toBe(true);
    expect(Writer.prototype.writeString).not.toBe(originalWrite);
  });

  it('serializes an export request to the very bytes the library writes', () => {
    const after = Buffer.from(serializer.serializeRequest(spans)!);
    expect(after.equals(before)).toBe(true);
    // And the same once more: a second patch is a no-op, not a wrapper around the wrapper.
    expect(useNativeOtlpStrings()).toBe(true);
    expect(Buffer.from(serializer.serializeRequest(spans)!).equals(before)).toBe(true);
  });

  it('follows the buffer when it grows past the estimate', () => {
    const native = new Writer(8);
    const library = new Writer(8);
    library.writeString = originalWrite;
    for (const s of [...STRINGS, ...[...STRINGS].reverse()]) {
      native.writeString(s);
      library.writeString(s);
    }
    expect(Buffer.from(native.finish()).equals(Buffer.from(library.finish()))).toBe(true);
  });
});
