import { ChildProcess, spawn } from 'node:child_process';
import { ReadBuffer, serializeMessage, type JSONRPCMessage, type Transport } from '@modelcontextprotocol/client';

/** How much of a process's stderr is kept to explain why it died (it is never logged whole). */
const STDERR_TAIL = 2048;

/**
 * The SDK's StdioClientTransport always merges part of the parent's environment (PATH, HOME,
 * USER...) into the child's. A catalog entry's process must receive exactly what the entry
 * declares and nothing else (no database URL, no key, nothing of another organization), so this
 * transport spawns with `env` as given. It also keeps stderr to itself: a server's chatter is not
 * the platform's log.
 */
export class CleanStdioTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;

  private process?: ChildProcess;
  private readonly buffer = new ReadBuffer();
  private stderrTail = '';
  private closed = false;

  constructor(private readonly params: { command: string; args: readonly string[]; env: Record<string, string> }) {}

  /** The end of what the process wrote to stderr, for an error message. */
  get stderr(): string {
    return this.stderrTail;
  }

  get pid(): number | undefined {
    return this.process?.pid;
  }

  start(): Promise<void> {
    if (this.process) throw new Error('CleanStdioTransport already started');
    return new Promise((resolve, reject) => {
      const child = spawn(this.params.command, [...this.params.args], {
        env: this.params.env,
        stdio: ['pipe', 'pipe', 'pipe'],
        shell: false,
        windowsHide: true,
      });
      this.process = child;
      child.once('error', (err) => {
        reject(err);
        this.onerror?.(err);
        this.finish();
      });
      child.once('spawn', () => resolve());
      child.once('close', () => this.finish());
      child.stdin!.on('error', (err) => this.onerror?.(err));
      child.stdout!.on('data', (chunk: Buffer) => {
        this.buffer.append(chunk);
        for (;;) {
          let message: JSONRPCMessage | null;
          try {
            message = this.buffer.readMessage();
          } catch (err) {
            this.onerror?.(err as Error);
            continue;
          }
          if (message === null) break;
          this.onmessage?.(message);
        }
      });
      child.stdout!.on('error', (err) => this.onerror?.(err));
      child.stderr!.on('data', (chunk: Buffer) => {
        this.stderrTail = (this.stderrTail + chunk.toString('utf8')).slice(-STDERR_TAIL);
      });
    });
  }

  send(message: JSONRPCMessage): Promise<void> {
    const stdin = this.process?.stdin;
    if (!stdin || this.closed) return Promise.reject(new Error('the server process is not running'));
    return new Promise((resolve) => {
      if (stdin.write(serializeMessage(message))) resolve();
      else stdin.once('drain', resolve);
    });
  }

  async close(): Promise<void> {
    const child = this.process;
    if (!child || this.closed) return this.finish();
    const exited = new Promise<void>((resolve) => child.once('close', () => resolve()));
    child.stdin?.end();
    const term = setTimeout(() => child.kill('SIGTERM'), 2000);
    const kill = setTimeout(() => child.kill('SIGKILL'), 4000);
    await exited;
    clearTimeout(term);
    clearTimeout(kill);
  }

  private finish(): void {
    if (this.closed) return;
    this.closed = true;
    this.buffer.clear();
    this.onclose?.();
  }
}
