import { FINISHED, RunsRepository, RunStatus } from './runs.repository';
import { RunSignals } from './run-signals';

/** How often a waiting request or an event stream looks for another node's writes. */
export const CROSS_NODE_POLL_MS = 500;
/** A comment on a quiet stream this often (API.md: 15 s). */
const KEEP_ALIVE_MS = 15_000;

/** Where a run stands: its status, and the sequence of its last event (null before its first). */
export interface RunHead {
  status: RunStatus;
  lastSeq: string | null;
}

/**
 * Where the runs watched on this node stand, asked for all of an organization's runs at once.
 * Each stream and each `Prefer: wait` request polled its run twice a second, two statements for a
 * stream (its events, then its status) whatever it found: one organization's 256 streams of 256
 * runs waiting were 1,035 statements a second on the shared pool, and another organization's p90
 * went from 7 to 78 ms (attack round 9). The heads asked in one turn of the event loop (the polls
 * fall on the same ticks) are one statement per organization; a stream reads events only when its
 * run has some past its position.
 */
export class RunHeads {
  private readonly asked = new Map<string, Map<string, { resolve: (h: RunHead | undefined) => void; reject: (e: unknown) => void }[]>>();

  constructor(
    private readonly repo: RunsRepository,
    private readonly signals: RunSignals,
  ) {}

  /** The run's head, read with every other run of its organization asked for in this turn; undefined when there is no such run. */
  of(orgId: string, runId: string): Promise<RunHead | undefined> {
    return new Promise((resolve, reject) => {
      let org = this.asked.get(orgId);
      if (!org) {
        this.asked.set(orgId, (org = new Map()));
        setImmediate(() => void this.read(orgId));
      }
      let waiting = org.get(runId);
      if (!waiting) org.set(runId, (waiting = []));
      waiting.push({ resolve, reject });
    });
  }

  /**
   * Waits, on the node's poll ticks and woken by the run's writes here, until the run has an event
   * after `last` ('news') or has finished ('finished'; its last events may still be unread);
   * undefined once `signal` aborts. `keepAlive` is called every 15 s meanwhile.
   */
  async news(orgId: string, runId: string, last: string, keepAlive: () => void, signal: AbortSignal): Promise<'news' | 'finished' | undefined> {
    let quietSince = Date.now();
    while (!signal.aborted) {
      const head = await this.of(orgId, runId);
      if (!head || FINISHED.has(head.status)) return 'finished';
      if (head.lastSeq !== null && BigInt(head.lastSeq) > BigInt(last)) return 'news';
      if (Date.now() - quietSince >= KEEP_ALIVE_MS) {
        keepAlive();
        quietSince = Date.now();
      }
      // On the same ticks for every stream, so that they poll together, once.
      await this.signals.wait(runId, CROSS_NODE_POLL_MS - (Date.now() % CROSS_NODE_POLL_MS), signal);
    }
    return undefined;
  }

  private async read(orgId: string): Promise<void> {
    const org = this.asked.get(orgId)!;
    this.asked.delete(orgId);
    try {
      const heads = await this.repo.heads(orgId, [...org.keys()]);
      for (const [runId, waiting] of org) for (const w of waiting) w.resolve(heads.get(runId));
    } catch (err) {
      for (const waiting of org.values()) for (const w of waiting) w.reject(err);
    }
  }
}
