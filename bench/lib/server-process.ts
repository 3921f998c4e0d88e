import { ChildProcess, spawn } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT } from './options';

/**
 * A server started by a benchmark, in its own process, as `node -r @swc-node/register <script>`:
 * the TypeScript sources compiled at load by SWC, the same transform Jest uses, so a run always
 * measures the working tree (a built dist/ can be stale) and needs no build step. After the
 * compile at boot, the code that runs is the same ES2022 JavaScript `nest build` would give.
 */
export interface ServerProcess {
  name: string;
  url: string;
  pid: number;
  /** Milliseconds from spawn to the ready line. */
  bootMs: number;
  logFile: string;
  /** The server's own resident memory (Linux /proc), in bytes. */
  rss(): number | undefined;
  stop(): Promise<void>;
}

const running = new Set<ChildProcess>();
let guarded = false;

/** Whatever happens to the benchmark, its servers go with it. */
function guardExit(): void {
  if (guarded) return;
  guarded = true;
  process.on('exit', () => {
    for (const child of running) child.kill('SIGKILL');
  });
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      for (const child of running) child.kill('SIGTERM');
      process.exit(130);
    });
  }
}

export interface StartOptions {
  name: string;
  /** Relative to `root`. */
  script: string;
  /** The checkout to run, default this one (bench/compare.ts runs another). */
  root?: string;
  env: Record<string, string>;
  /** A line of the server's output that says it listens, with the URL in group 1. */
  ready?: RegExp;
  timeoutMs?: number;
}

export async function startServer(options: StartOptions): Promise<ServerProcess> {
  guardExit();
  const logDir = mkdtempSync(join(tmpdir(), `bench-log-${options.name}-`));
  const logFile = join(logDir, 'server.log');
  // Output goes to a file, not a pipe: reading it would cost the benchmark process CPU that the
  // load generator needs, and a request log is written to a file in production too.
  const fd = openSync(logFile, 'a');
  const started = Date.now();
  // BENCH_PROFILE=<dir>: every server writes a V8 CPU profile of its whole life to <dir>/<name>/ when
  // it stops (open it in Chrome DevTools, or summarize it with bench/profile-summary.ts).
  const profile = process.env.BENCH_PROFILE ? ['--cpu-prof', `--cpu-prof-dir=${join(process.env.BENCH_PROFILE, options.name)}`] : [];
  const child = spawn(process.execPath, [...profile, '-r', '@swc-node/register', '-r', join(ROOT, 'bench', 'lib', 'orphan-guard.js'), options.script], {
    cwd: options.root ?? ROOT,
    env: { PATH: process.env.PATH, HOME: process.env.HOME, HOST: '127.0.0.1', PORT: '0', ...options.env },
    stdio: ['ignore', fd, fd],
  });
  closeSync(fd);
  running.add(child);
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  void exited.then(() => running.delete(child));
  const ready = options.ready ?? /listening on (http:\/\/[\d.]+:\d+)/;
  const output = () => readFileSync(logFile, 'utf8');

  const url = await new Promise<string>((resolve, reject) => {
    let done = false;
    const finish = (fn: () => void) => {
      if (done) return;
      done = true;
      clearInterval(poll);
      clearTimeout(timeout);
      fn();
    };
    const poll = setInterval(() => {
      const m = ready.exec(output());
      if (m) finish(() => resolve(m[1]));
    }, 50);
    const timeout = setTimeout(() => {
      child.kill('SIGKILL');
      finish(() => reject(new Error(`${options.name} did not start within ${options.timeoutMs ?? 120000} ms:\n${tail(output())}`)));
    }, options.timeoutMs ?? 120000);
    void exited.then((code) => finish(() => reject(new Error(`${options.name} exited with ${code} before it was ready:\n${tail(output())}`))));
  });

  return {
    name: options.name,
    url,
    pid: child.pid!,
    bootMs: Date.now() - started,
    logFile,
    rss: () => rssOf(child.pid!),
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        const killer = setTimeout(() => child.kill('SIGKILL'), 15000);
        await exited;
        clearTimeout(killer);
      }
      rmSync(logDir, { recursive: true, force: true });
    },
  };
}

function tail(text: string, lines = 30): string {
  return text.split('\n').slice(-lines).join('\n');
}

function rssOf(pid: number): number | undefined {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const m = /VmRSS:\s+(\d+) kB/.exec(status);
    return m ? Number(m[1]) * 1024 : undefined;
  } catch {
    return undefined;
  }
}
