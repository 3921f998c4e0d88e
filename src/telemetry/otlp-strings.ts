import { createRequire } from 'node:module';

/**
 * OTLP over http/protobuf (the OTLP default) is serialized by @opentelemetry/otlp-transformer's
 * own protobuf writer, which measures every string a character at a time in JavaScript and then
 * copies it a character at a time: three passes over every SQL text, id and route of every span.
 * In a traced tool call that was the largest single cost of exporting (docs/benchmarks.md,
 * "Tracing made cheaper"). Strings past a few characters are measured and written by Node's
 * native UTF-8 encoder instead: the same bytes (a lone surrogate is U+FFFD in both, as the
 * writer's TextEncoder has it), tested against the library's own writer.
 *
 * The writer is internal to the library (pinned by package-lock), so it is found by path; if its
 * shape changes, nothing is patched and export works as the library ships it (the test says so).
 */

/** Below this many UTF-16 units the library's loop is cheaper than a call into native code. */
export const NATIVE_STRING_MIN = 24;

interface Writer {
  _buffer: Uint8Array;
  pos: number;
  writeVarint(v: number): void;
  _ensureCapacity(n: number): void;
  writeString(s: string): void;
}
interface Estimator {
  pos: number;
  writeString(s: string): void;
}
interface WriterView {
  view?: Buffer;
}

const patched = new WeakSet<object>();

/** The library's modules as the SDK's OTLP/protobuf trace exporter loads them (the copy that runs). */
export function otlpTransformerModule(path = 'index.js'): Record<string, unknown> {
  const fromSdk = createRequire(require.resolve('@opentelemetry/sdk-node'));
  const fromExporter = createRequire(fromSdk.resolve('@opentelemetry/exporter-trace-otlp-proto'));
  return fromExporter(fromExporter.resolve('@opentelemetry/otlp-transformer').replace(/index\.js$/, path)) as Record<string, unknown>;
}

/** Answers whether the library's writer is (now) the faster one. */
export function useNativeOtlpStrings(): boolean {
  let ProtobufWriter: { prototype: Writer } | undefined;
  let ProtobufSizeEstimator: { prototype: Estimator } | undefined;
  let estimateVarintSize: ((v: number) => number) | undefined;
  try {
    ProtobufWriter = otlpTransformerModule('common/protobuf/protobuf-writer.js').ProtobufWriter as typeof ProtobufWriter;
    ProtobufSizeEstimator = otlpTransformerModule('common/protobuf/protobuf-size-estimator.js').ProtobufSizeEstimator as typeof ProtobufSizeEstimator;
    estimateVarintSize = otlpTransformerModule('common/protobuf/utils.js').estimateVarintSize as typeof estimateVarintSize;
  } catch {
    return false;
  }
  const writer = ProtobufWriter?.prototype;
  const estimator = ProtobufSizeEstimator?.prototype;
  if (
    typeof writer?.writeString !== 'function' ||
    typeof writer.writeVarint !== 'function' ||
    typeof writer._ensureCapacity !== 'function' ||
    typeof estimator?.writeString !== 'function' ||
    typeof estimateVarintSize !== 'function'
  ) {
    return false;
  }
  const varintSize = estimateVarintSize;
  if (patched.has(writer)) return true;

  const writeShort = writer.writeString;
  writer.writeString = function (this: Writer & WriterView, str: string): void {
    if (str.length < NATIVE_STRING_MIN) return writeShort.call(this, str);
    const length = Buffer.byteLength(str, 'utf8');
    this.writeVarint(length);
    this._ensureCapacity(length);
    // The writer replaces its buffer when it grows: the Buffer view follows it.
    let view = this.view;
    if (view?.buffer !== this._buffer.buffer || view.byteOffset !== this._buffer.byteOffset) {
      view = this.view = Buffer.from(this._buffer.buffer, this._buffer.byteOffset, this._buffer.byteLength);
    }
    view.write(str, this.pos, length, 'utf8');
    this.pos += length;
  };
  const measureShort = estimator.writeString;
  estimator.writeString = function (this: Estimator, str: string): void {
    if (str.length < NATIVE_STRING_MIN) return measureShort.call(this, str);
    const length = Buffer.byteLength(str, 'utf8');
    this.pos += varintSize(length) + length;
  };
  patched.add(writer);
  return true;
}
