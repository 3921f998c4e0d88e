import { Injectable } from '@nestjs/common';

/**
 * Wakes whoever watches a run in this process (a `Prefer: wait` request, an event stream) the
 * moment this process writes it. Writes of other nodes are seen by polling; this only makes the
 * common case immediate.
 */
@Injectable()
export class RunSignals {
  private readonly watchers = new Map<string, Set<() => void>>();

  watch(runId: string, wake: () => void): () => void {
    let set = this.watchers.get(runId);
    if (!set) this.watchers.set(runId, (set = new Set()));
    set.add(wake);
    return () => {
      set.delete(wake);
      if (set.size === 0 && this.watchers.get(runId) === set) this.watchers.delete(runId);
    };
  }

  notify(runId: string): void {
    this.watchers.get(runId)?.forEach((wake) => wake());
  }

  /** Resolves after `ms`, or as soon as the run is written here, or on abort. */
  wait(runId: string, ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        stop();
        signal?.removeEventListener('abort', done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      const stop = this.watch(runId, done);
      signal?.addEventListener('abort', done, { once: true });
    });
  }
}
