import { ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';

/** A server in a process of its own, as `npm start` runs it (or a harness with fixtures). */
export interface ServerProcess {
  child: ChildProcess;
  url: string;
  output: () => string;
}

const root = join(__dirname, '..', '..');

export function environment(extra: Record<string, string | undefined>): NodeJS.ProcessEnv {
  return { PATH: process.env.PATH, HOME: process.env.HOME, PORT: '0', LOG_LEVEL: 'warn', ...extra };
}

export function runServer(
  env: Record<string, string | undefined>,
  entry = 'src/main.ts',
): { child: ChildProcess; output: () => string; exited: Promise<number | null> } {
  const child = spawn(process.execPath, ['-r', '@swc-node/register', entry], { cwd: root, env: environment(env), stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, output: () => out, exited };
}

export async function startServerProcess(env: Record<string, string | undefined>, entry?: string): Promise<ServerProcess> {
  const { child, output, exited } = runServer(env, entry);
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setInterval(() => {
      const m = /listening on (http:\/\/[\d.]+:\d+)/.exec(output());
      if (m) {
        clearInterval(timer);
        resolve(m[1]);
      }
    }, 50);
    void exited.then((code) => {
      clearInterval(timer);
      reject(new Error(`server exited with ${code}: ${output()}`));
    });
  });
  return { child, url, output };
}

export async function stopServerProcess(server: ServerProcess, signal: NodeJS.Signals = 'SIGTERM'): Promise<number | null> {
  if (server.child.exitCode !== null || server.child.signalCode !== null) return server.child.exitCode;
  const exited = new Promise<number | null>((resolve) => server.child.once('exit', (code) => resolve(code)));
  server.child.kill(signal);
  return exited;
}
