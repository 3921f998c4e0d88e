import autocannon from 'autocannon';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { loadavg } from 'node:os';

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

export async function runLoad(spec: LoadSpec, durationS: number): Promise<Measurement> {
  keepOnlyBodiesThatAreRead();
  spec.unitTimer?.take();
  const instance = autocannon({
    url: spec.url,
    connections: spec.connections,
    duration: durationS,
    requests: spec.requests,
    timeout: 10,
  });
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
  const cpuUsed = cpuBefore !== undefined && cpuAfter !== undefined ? cpuAfter - cpuBefore : undefined;
  const base = { requests, errors, statusCodes, durationS: result.duration, load1: loadavg()[0] };
  const perUnitCpu = (units: number) => (cpuUsed !== undefined && units > 0 ? { serverCpuMsPerUnit: cpuUsed / units } : {});
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
