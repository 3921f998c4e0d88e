import { ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:net';
import Redis from 'ioredis';

/**
 * The Redis the shared-limit suites use: TEST_REDIS_URL (CI sets it to the Redis it runs). Unset,
 * those suites say so and do not run, like the multi-node suite without DATABASE_URL.
 */
export const TEST_REDIS_URL = process.env.TEST_REDIS_URL;

/** A key prefix no other test run shares, so runs on one Redis never count each other's hits. */
export function uniquePrefix(): string {
  return `cp-test:${process.pid}:${randomBytes(4).toString('hex')}:`;
}

/** Deletes every key under `prefix`. */
export async function dropKeys(url: string, prefix: string): Promise<void> {
  const redis = new Redis(url, { maxRetriesPerRequest: 1 });
  try {
    const keys = await redis.keys(`${prefix}*`);
    if (keys.length) await redis.del(...keys);
  } finally {
    redis.disconnect();
  }
}

export interface OwnRedis {
  url: string;
  port: number;
  stop(): Promise<void>;
  /** Stops the server's process where it stands (SIGSTOP): connections stay open, nothing is answered, as a Redis paused or stalled. */
  pause(): void;
  /** Lets it go on (SIGCONT): it answers what it was sent meanwhile. */
  resume(): void;
}

/**
 * A redis-server of the test's own, on a port the OS just handed out (free a moment ago: the
 * small race with another process taking it is retried once), with nothing written to disk.
 */
export async function startOwnRedis(): Promise<OwnRedis> {
  for (let attempt = 0; ; attempt++) {
    const port = await freePort();
    const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
    const ok = await new Promise<boolean>((resolve) => {
      const timer = setInterval(() => {
        if (/Ready to accept connections/i.test(out)) done(true);
      }, 25);
      const done = (v: boolean) => {
        clearInterval(timer);
        resolve(v);
      };
      child.once('exit', () => done(false));
    });
    if (ok) {
      return {
        url: `redis://127.0.0.1:${port}`,
        port,
        stop: () => stopChild(child),
        pause: () => void child.kill('SIGSTOP'),
        resume: () => void child.kill('SIGCONT'),
      };
    }
    if (attempt >= 1) throw new Error(`redis-server did not start: ${out}`);
  }
}

function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    child.once('exit', () => resolve());
    child.kill('SIGKILL');
  });
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}
