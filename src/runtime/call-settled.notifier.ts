import { Injectable } from '@nestjs/common';

/**
 * Wakes whoever waits for a call's decision in this process the moment it is written here. Other
 * processes (other API nodes) are seen by polling; this only makes the common case immediate.
 */
@Injectable()
export class CallSettledNotifier {
  private readonly waiters = new Map<string, Set<() => void>>();
  private readonly watchers = new Set<(callIds: readonly string[]) => void>();

  /**
   * Hears every decision written in this process, whatever the call (agent runs wake their waiting
   * runs with it). Returns the function that stops listening.
   */
  watch(listener: (callIds: readonly string[]) => void): () => void {
    this.watchers.add(listener);
    return () => this.watchers.delete(listener);
  }

  /** Returns the function that stops listening. */
  listen(callId: string, wake: () => void): () => void {
    let set = this.waiters.get(callId);
    if (!set) this.waiters.set(callId, (set = new Set()));
    set.add(wake);
    return () => {
      set.delete(wake);
      if (set.size === 0 && this.waiters.get(callId) === set) this.waiters.delete(callId);
    };
  }

  notify(callIds: Iterable<string>): void {
    const ids = [...callIds];
    for (const id of ids) this.waiters.get(id)?.forEach((wake) => wake());
    if (ids.length) this.watchers.forEach((listener) => listener(ids));
  }
}
