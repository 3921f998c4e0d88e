/**
 * The bound on one endpoint's pending deliveries (WEBHOOK_MAX_PENDING_PER_ENDPOINT), as numbers.
 * The decisions themselves are made in the database (webhook-backlog.repository.ts): each is one
 * statement that counts and acts, so two nodes sweeping at once cannot act on stale counts.
 */

/**
 * An endpoint at its cap gets new deliveries again once its pending ones are down to this: half.
 * Resuming as soon as it dipped under the cap would flip every sweep for a receiver that answers
 * a little slower than events come (an audit event each way, and a gap in what it receives every
 * interval); half leaves room for a burst before it drops again.
 */
export function resumeAt(maxPending: number): number {
  return Math.floor(maxPending / 2);
}

/**
 * `backlog.pending` is counted up to this. At the cap new deliveries stop within a sweep
 * interval, so a real count stays near the cap; a larger backlog (left from before the cap, or a
 * lowered one) would make every read of the endpoint count it whole.
 */
export function pendingCountedUpTo(maxPending: number): number {
  return maxPending * 2;
}

/** Audit events one statement of the drop count reads (a sweep reads on until it has caught up). */
export const DROP_COUNT_BATCH = 5_000;

/** Who marks an endpoint and clears the mark, in the audit log. */
export const BACKLOG_ACTOR = { type: 'system', id: 'webhook-backlog' } as const;
