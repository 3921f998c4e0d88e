import autocannon from 'autocannon';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { connect } from 'node:net';
import { loadavg } from 'node:os';
import { PerformanceObserver } from 'node:perf_hooks';

/** One HTTP exchange of a scenario, as autocannon sends it. */
export type LoadRequest = autocannon.Request;

export interface LoadSpec {
  url: string;
  /** One request repeated, or a sequence each connection loops through (a cycle). */
  requests: LoadRequest[];
  connections: number;
  /** How many requests make one unit the row counts (an approval cycle is 3 requests). Default 1. */
  requestsPerUnit?: number;
  /**
   * Per-unit latency, when a unit is several requests: the scenario calls `mark(context)` when a
   * unit starts and `done(context)` when it ends, and the row's percentiles are of whole units.
   */
  unitTimer?: UnitTimer;
  /** The server process: its CPU time over the measurement is divided by the requests it answered. */
  serverPid?: number;
  /** Statuses that are the expected answer (default: any 2xx); any other counts as an error. */
  okStatuses?: number[];
}

/** What one measurement gives. Latencies in milliseconds. */
export interface Measurement {
  /** Units (requests, or cycles) per second. */
  rps: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
  /** Units completed. */
  units: number;
  requests: number;
  /** Connection errors, timeouts and answers that were not 2xx. */
  errors: number;
  statusCodes: Record<string, number>;
  durationS: number;
  /** 1-minute load average of the machine when the measurement ended. */
  load1: number;
  /**
   * CPU time the server process used per unit (request or cycle; user + system, from /proc; Linux only). Unlike
   * throughput it hardly depends on what else runs on the machine, so it is the figure to compare
   * across runs. With the embedded database it includes the database; with PostgreSQL it does not.
   */
  serverCpuMsPerUnit?: number;
  /**
   * Milliseconds the load generator itself spent stopped in garbage collection during the
   * measurement: while it collects, no answer is read and no request sent, so every connection's
   * latency grows by the pause (docs/benchmarks.md, "The load generator's heap").
   */
  loadGeneratorGcMs?: number;
  /** CPU time the load generator (this process: user + system) used per unit: it shares the machine with the server. */
  loadGeneratorCpuMsPerUnit?: number;
}

/** Measures a unit made of several requests end to end (autocannon only times single requests). */
export class UnitTimer {
  private samples: number[] = [];

  mark(context: Record<string, unknown>): void {
    context.unitStart = process.hrtime.bigint();
  }

  done(context: Record<string, unknown>): void {
    const start = context.unitStart as bigint | undefined;
    if (start !== undefined) this.samples.push(Number(process.hrtime.bigint() - start) / 1e6);
    context.unitStart = undefined;
  }

  take(): number[] {
    const out = this.samples;
    this.samples = [];
    return out;
  }
}

const patched = Symbol('bodies kept only when read');

/**
 * autocannon appends every answer's body to a string (`body += chunk`, decoding it) for an
 * `onResponse` that may read it, whether or not the request has one. On the 2-core machine the
 * load generator shares the cores with the server it measures, so that work, which grows with the
 * answer, was taken from the server: a 15 KiB answer cost the client about 12 µs more than a
 * 129-byte one, per request, and the server's own figure with it (docs/benchmarks.md, issue 21). A
 * body that no `onResponse` reads is now left undecoded; its bytes are still received, parsed and
 * counted. The same for every row.
 */
function keepOnlyBodiesThatAreRead(): void {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const queue = require('autocannon/lib/pipelinedRequestsQueue.js') as {
    prototype: { addBody(data: Buffer): void; peek(): { req?: LoadRequest } | undefined; [patched]?: true };
  };
  const proto = queue.prototype;
  if (proto[patched]) return;
  const addBody = proto.addBody;
  // If a release moves this, the benchmark says so instead of measuring differently unnoticed.
  if (typeof addBody !== 'function' || typeof proto.peek !== 'function')
    throw new Error('autocannon: PipelinedRequestsQueue.addBody/peek not found; see keepOnlyBodiesThatAreRead in bench/lib/load.ts');
  proto.addBody = function (this: typeof proto, data: Buffer) {
    if (typeof this.peek()?.req?.onResponse === 'function') addBody.call(this, data);
  };
  proto[patched] = true;
}

const readBuffer = Symbol("the connection's read buffer");
const readsIntoOneBuffer = Symbol('connections read into one buffer each');

interface AutocannonClient {
  secure: boolean;
  ipc: boolean;
  destroyed: boolean;
  opts: { port: number; hostname: string; pipelining: number };
  conn: import('node:net').Socket;
  parser: { execute(chunk: Buffer): unknown };
  pipelinedRequests: { addByteCount(n: number): void };
  emit(event: string, ...args: unknown[]): boolean;
  _connect(): void;
  _doRequest(): void;
  [readBuffer]?: Buffer;
}

/**
 * Node gives every read from a socket a buffer of its own (64 KiB, cut to what arrived), memory
 * outside the JavaScript heap that V8 counts: a 15 KiB answer per read at 7,000 answers a second
 * made the load generator run a full garbage collection every 300 ms, and spend twice the CPU per
 * answer that it spent on `/me` (0.043 against 0.023 ms, measured with `process.cpuUsage()`), all
 * of it taken from the server on the 2 shared cores (docs/benchmarks.md, "The load generator's
 * heap"). Each connection now reads into one buffer of its own, which Node supports for exactly
 * this (`net.connect({ onread })`): autocannon's parser reads each chunk synchronously and keeps
 * nothing of it but strings, so reusing the buffer is safe. Plain TCP only (the benchmark's);
 * TLS and sockets on a path connect as autocannon does.
 */
function readIntoOneBufferPerConnection(): void {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const Client = require('autocannon/lib/httpClient.js') as { prototype: AutocannonClient & { [readsIntoOneBuffer]?: true } };
  const proto = Client.prototype;
  if (typeof proto._connect !== 'function' || typeof proto._doRequest !== 'function') {
    throw new Error('autocannon moved Client.prototype._connect: bench/lib/load.ts must follow it');
  }
  if (proto[readsIntoOneBuffer]) return;
  const original = proto._connect;
  proto._connect = function (this: AutocannonClient) {
    if (this.secure || this.ipc) return original.call(this);
    const buffer = (this[readBuffer] ??= Buffer.allocUnsafe(64 * 1024));
    this.conn = connect({
      port: this.opts.port,
      host: this.opts.hostname,
      onread: {
        buffer,
        callback: (n: number, buf: Uint8Array) => {
          this.pipelinedRequests.addByteCount(n);
          this.parser.execute((buf as Buffer).subarray(0, n));
          return true;
        },
      },
    });
    // As autocannon's own _connect: reconnect after an error or the server's end of the connection.
    this.conn.on('error', (error) => {
      this.emit('connError', error);
      if (!this.destroyed) this._connect();
    });
    this.conn.on('end', () => {
      if (!this.destroyed) this._connect();
    });
    for (let i = 0; i < this.opts.pipelining; i++) this._doRequest();
  };
  proto[readsIntoOneBuffer] = true;
}

export async function runLoad(spec: LoadSpec, durationS: number): Promise<Measurement> {
  keepOnlyBodiesThatAreRead();
  readIntoOneBufferPerConnection();
  spec.unitTimer?.take();
  const instance = autocannon({
    url: spec.url,
    connections: spec.connections,
    duration: durationS,
    requests: spec.requests,
    timeout: 10,
  });
  const gc = gcPauses();
  const clientBefore = process.cpuUsage();
  const cpuBefore = cpuMs(spec.serverPid);
  // autocannon's own histogram keeps whole milliseconds; the response event has the exact time.
  const latencies = new Samples();
  instance.on('response', (_client: unknown, _status: number, _bytes: number, responseTime: number) => latencies.push(responseTime));
  const result = await instance;
  const perUnit = spec.requestsPerUnit ?? 1;
  const requests = result.requests.total;
  const statusCodes = Object.fromEntries(Object.entries(result.statusCodeStats ?? {}).map(([code, s]) => [code, Number(s.count)]));
  const ok = spec.okStatuses;
  const unexpected = ok ? Object.entries(statusCodes).reduce((n, [code, count]) => (ok.includes(Number(code)) ? n : n + count), 0) : result.non2xx;
  const errors = result.errors + unexpected;
  const cpuAfter = cpuMs(spec.serverPid);
  const loadGeneratorGcMs = gc.stop();
  const client = process.cpuUsage(clientBefore);
  const clientCpuMs = (client.user + client.system) / 1000;
  const cpuUsed = cpuBefore !== undefined && cpuAfter !== undefined ? cpuAfter - cpuBefore : undefined;
  const base = { requests, errors, statusCodes, durationS: result.duration, load1: loadavg()[0], loadGeneratorGcMs };
  const perUnitCpu = (units: number) => ({
    ...(cpuUsed !== undefined && units > 0 ? { serverCpuMsPerUnit: cpuUsed / units } : {}),
    ...(units > 0 ? { loadGeneratorCpuMsPerUnit: clientCpuMs / units } : {}),
  });
  const unitSamples = spec.unitTimer?.take();
  if (unitSamples) {
    const sorted = unitSamples.sort((a, b) => a - b);
    return {
      ...base,
      ...perUnitCpu(sorted.length),
      units: sorted.length,
      rps: sorted.length / result.duration,
      p50: percentile(sorted, 50),
      p90: percentile(sorted, 90),
      p99: percentile(sorted, 99),
      max: sorted[sorted.length - 1] ?? 0,
    };
  }
  const sorted = latencies.sorted();
  return {
    ...base,
    ...perUnitCpu(Math.floor(requests / perUnit)),
    units: Math.floor(requests / perUnit),
    rps: requests / perUnit / result.duration,
    p50: percentile(sorted, 50),
    p90: percentile(sorted, 90),
    p99: percentile(sorted, 99),
    max: sorted[sorted.length - 1] ?? 0,
  };
}

/** A growable array of doubles: hundreds of thousands of samples without boxing each one. */
class Samples {
  private data = new Float64Array(1 << 16);
  private length = 0;

  push(value: number): void {
    if (this.length === this.data.length) {
      const bigger = new Float64Array(this.data.length * 2);
      bigger.set(this.data);
      this.data = bigger;
    }
    this.data[this.length++] = value;
  }

  sorted(): Float64Array {
    return this.data.slice(0, this.length).sort();
  }
}

/** Sums this process's garbage-collection pauses from now until `stop()`. */
function gcPauses(): { stop(): number } {
  let total = 0;
  const observer = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) total += entry.duration;
  });
  observer.observe({ entryTypes: ['gc'] });
  return {
    stop() {
      // Entries are delivered asynchronously: take what is queued before disconnecting.
      for (const entry of observer.takeRecords()) total += entry.duration;
      observer.disconnect();
      return total;
    },
  };
}

let ticksPerSecond: number | undefined;

/** utime + stime of a process, in milliseconds; undefined where /proc is not there. */
export function cpuMs(pid: number | undefined): number | undefined {
  if (pid === undefined) return undefined;
  try {
    // The command name (field 2) may hold spaces; the fields after its closing parenthesis do not.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    ticksPerSecond ??= Number(execFileSync('getconf', ['CLK_TCK']).toString().trim()) || 100;
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / ticksPerSecond;
  } catch {
    return undefined;
  }
}

/** Nearest-rank percentile of sorted samples. */
export function percentile(sorted: ArrayLike<number>, p: number): number {
  if (sorted.length === 0) return 0;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank - 1))];
}

/** Several rounds of one scenario, folded into one row: total units over total time; the median round's percentiles. */
export function combine(rounds: readonly Measurement[]): Measurement {
  const durationS = sum(rounds.map((r) => r.durationS));
  const units = sum(rounds.map((r) => r.units));
  const statusCodes: Record<string, number> = {};
  for (const r of rounds) for (const [code, n] of Object.entries(r.statusCodes)) statusCodes[code] = (statusCodes[code] ?? 0) + n;
  return {
    rps: units / durationS,
    p50: median(rounds.map((r) => r.p50)),
    p90: median(rounds.map((r) => r.p90)),
    p99: median(rounds.map((r) => r.p99)),
    max: Math.max(...rounds.map((r) => r.max)),
    units,
    requests: sum(rounds.map((r) => r.requests)),
    errors: sum(rounds.map((r) => r.errors)),
    statusCodes,
    durationS,
    load1: median(rounds.map((r) => r.load1)),
    loadGeneratorGcMs: sum(rounds.map((r) => r.loadGeneratorGcMs ?? 0)),
    loadGeneratorCpuMsPerUnit: rounds.every((r) => r.loadGeneratorCpuMsPerUnit !== undefined)
      ? sum(rounds.map((r) => r.loadGeneratorCpuMsPerUnit! * r.units)) / sum(rounds.map((r) => r.units))
      : undefined,
    serverCpuMsPerUnit: rounds.every((r) => r.serverCpuMsPerUnit !== undefined)
      ? sum(rounds.map((r) => r.serverCpuMsPerUnit! * r.units)) / sum(rounds.map((r) => r.units))
      : undefined,
  };
}

function sum(values: readonly number[]): number {
  return values.reduce((a, b) => a + b, 0);
}

export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  if (sorted.length === 0) return 0;
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}
