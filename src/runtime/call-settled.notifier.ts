import { Injectable } from '@nestjs/common';

/**
 * Wakes whoever waits for a call's decision in this process the moment it is written here. Other
 * processes (other API nodes) are seen by polling; this only makes the common case immediate.
 */
@Injectable()
export class CallSettledNotifier {
  private readonly waiters = new Map<string, Set<() => void>>();

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
    for (const id of callIds) this.waiters.get(id)?.forEach((wake) => wake());
  }
}
