/**
 * Requests of one organization a node holds open on purpose (waiting for a decision or a run, an
 * event stream, a stalled reader), counted so that at most `max()` are held at once; the others are
 * answered without waiting, or refused (OrgStreamSlots). A
 * held request keeps one of the node's HTTP_MAX_CONNECTIONS, so unbounded, one organization's
 * waits filled them and every other client, health checks included, was refused (attack round 10).
 * `max` is read at each ask, so that a setting can change without a new object. With `budget`
 * (the node's HeldRequests), a place is taken only when the budget has one too, and given back
 * with it.
 */
export class OrgHolds {
  private readonly held = new Map<string, number>();

  constructor(
    private readonly max: () => number,
    private readonly budget?: { tryHold(orgId: string): (() => void) | undefined },
  ) {}

  /** A release (once counts; later calls do nothing) when the organization has room, else undefined. */
  tryHold(orgId: string): (() => void) | undefined {
    const now = this.held.get(orgId) ?? 0;
    if (now >= this.max()) return undefined;
    const fromBudget = this.budget?.tryHold(orgId);
    if (this.budget && !fromBudget) return undefined;
    this.held.set(orgId, now + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      fromBudget?.();
      const left = (this.held.get(orgId) ?? 1) - 1;
      if (left > 0) this.held.set(orgId, left);
      else this.held.delete(orgId);
    };
  }

  /** How many of the organization's requests are held now. */
  count(orgId: string): number {
    return this.held.get(orgId) ?? 0;
  }
}
