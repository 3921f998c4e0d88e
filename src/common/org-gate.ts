/**
 * At most `concurrency` of one organization's works of one kind at once on this node; the others
 * wait here, in order of arrival, holding nothing: above all no database connection. The pool is
 * every organization's, and work that waits on a database lock (or runs long) while holding a
 * connection lets one organization take all of it: 30 document uploads of one builder key at
 * once held 9 of 10 connections waiting on the organization's lock, and `/health/ready` failed
 * (attack round 8).
 */
export class OrgGate {
  private readonly orgs = new Map<string, { running: number; waiting: Waiter[] }>();

  constructor(
    private readonly concurrency: number,
    /** How many may wait, per organization; past it `refuse()` is thrown. Unbounded when omitted. */
    private readonly maxWaiting = Infinity,
    private readonly refuse: (waiting: number) => Error = () => new Error('too many waiting'),
  ) {}

  /**
   * Runs `work` in its turn. A wait ended by `signal` (the caller gave up: its timeout, its client
   * gone) rejects with the signal's reason and never runs the work.
   */
  async run<T>(orgId: string, work: () => Promise<T>, signal?: AbortSignal): Promise<T> {
    const leave = await this.enter(orgId, signal);
    try {
      return await work();
    } finally {
      leave();
    }
  }

  /**
   * A turn held until the function returned is called (once counts; later calls do nothing): for
   * work whose end is not one promise's, such as an exchange that lasts until its body is read.
   */
  async enter(orgId: string, signal?: AbortSignal): Promise<() => void> {
    signal?.throwIfAborted();
    let org = this.orgs.get(orgId);
    if (!org) this.orgs.set(orgId, (org = { running: 0, waiting: [] }));
    if (org.running >= this.concurrency) {
      if (org.waiting.length >= this.maxWaiting) throw this.refuse(org.waiting.length);
      await new Promise<void>((resolve, reject) => {
        const waiter: Waiter = { go: resolve };
        const abort = () => {
          const i = org.waiting.indexOf(waiter);
          if (i >= 0) org.waiting.splice(i, 1);
          this.forget(orgId, org);
          reject(signal!.reason);
        };
        waiter.go = () => {
          signal?.removeEventListener('abort', abort);
          resolve();
        };
        signal?.addEventListener('abort', abort, { once: true });
        org.waiting.push(waiter);
      });
    } else {
      org.running++;
    }
    let left = false;
    return () => {
      if (left) return;
      left = true;
      const next = org.waiting.shift();
      // The turn passes on as it is: `running` counts the next one now.
      if (next) next.go();
      else {
        org.running--;
        this.forget(orgId, org);
      }
    };
  }

  /** How many of the organization's works run and wait now. */
  load(orgId: string): { running: number; waiting: number } {
    const org = this.orgs.get(orgId);
    return { running: org?.running ?? 0, waiting: org?.waiting.length ?? 0 };
  }

  private forget(orgId: string, org: { running: number; waiting: Waiter[] }): void {
    if (org.running === 0 && org.waiting.length === 0 && this.orgs.get(orgId) === org) this.orgs.delete(orgId);
  }
}

interface Waiter {
  go: () => void;
}
