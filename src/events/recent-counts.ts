/**
 * Counts of webhook endpoints' pending deliveries (`backlog.pending`), each used for up to
 * `reuseMs` on this node after its count started, and counted once for all of an organization's
 * reads that want it meanwhile. A count reads up to twice WEBHOOK_MAX_PENDING_PER_ENDPOINT index
 * entries an endpoint: counted for every `GET /webhooks`, 50 endpoints with 10,000 pending each
 * cost 72 to 154 ms of the database a request, and one admin key at its rate limit took another
 * organization's `GET /agents` from p50 15 ms to up to 69 ms, p90 36 to 205 ms (attack round 14).
 * A counter kept on the endpoint's row would be exact, but every event's write would then hold
 * that row until its transaction commits, queueing the organization's writers behind each other
 * (migrations/1764522750000-webhook-backlog.ts).
 */
export class RecentCounts {
  private readonly counted = new Map<string, { n: number; at: number }>();
  /** The count under way for each organization: its reads wait for it rather than count beside it. */
  private readonly running = new Map<string, Promise<unknown>>();

  constructor(
    /** Counts `ids` of the organization (every id answered). */
    private readonly count: (orgId: string, ids: readonly string[]) => Promise<Map<string, number>>,
    private readonly reuseMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  /** Each of `ids`, counted at most `reuseMs` ago. */
  async of(orgId: string, ids: readonly string[]): Promise<Map<string, number>> {
    // Waiting once for another read's count is enough: it was started after this read came, or
    // it counted other endpoints, and either way this read counts what it still lacks itself.
    for (let waited = false; ; waited = true) {
      const stale = this.stale(ids);
      if (stale.length === 0) return this.answer(ids);
      const other = this.running.get(orgId);
      if (other === undefined || waited) return this.countNow(orgId, ids, stale);
      await other.catch(() => undefined);
    }
  }

  private async countNow(orgId: string, ids: readonly string[], stale: readonly string[]): Promise<Map<string, number>> {
    const at = this.now();
    const run = this.count(orgId, stale);
    this.running.set(orgId, run);
    try {
      const counts = await run;
      this.forgetOld(at);
      for (const id of stale) this.counted.set(id, { n: counts.get(id) ?? 0, at });
      const answer = this.answer(ids);
      // What this read counted is its answer even if it is already past reuse (a slow count).
      for (const id of stale) answer.set(id, counts.get(id) ?? 0);
      return answer;
    } finally {
      if (this.running.get(orgId) === run) this.running.delete(orgId);
    }
  }

  private stale(ids: readonly string[]): string[] {
    const now = this.now();
    return ids.filter((id) => {
      const c = this.counted.get(id);
      return c === undefined || now - c.at > this.reuseMs;
    });
  }

  private answer(ids: readonly string[]): Map<string, number> {
    return new Map(ids.map((id) => [id, this.counted.get(id)?.n ?? 0]));
  }

  /** Endpoints nobody read for a while (deleted ones among them) are not kept. */
  private forgetOld(now: number): void {
    if (this.counted.size < 1024) return;
    for (const [id, c] of this.counted) if (now - c.at > this.reuseMs) this.counted.delete(id);
  }
}
