/** Waits grow threefold from the base, up to this. */
export const MAX_RETRY_DELAY_MS = 3_600_000;
const GROWTH = 3;
/** ±20 %: deliveries that failed together (a receiver's outage) do not all come back together. */
const JITTER = 0.2;

export interface RetryPolicy {
  baseMs: number;
  /** From the event's creation: past it, a failed attempt is the last one. */
  windowMs: number;
}

/**
 * When to try again after failed attempt number `attempt` (1-based), or undefined when the
 * delivery has been retried for its whole window and is now `failed`.
 */
export function nextAttemptAt(policy: RetryPolicy, attempt: number, createdAt: Date, now: Date, random: () => number = Math.random): Date | undefined {
  const exponential = policy.baseMs * Math.pow(GROWTH, Math.min(attempt - 1, 30));
  const delay = Math.min(exponential, MAX_RETRY_DELAY_MS) * (1 - JITTER + 2 * JITTER * random());
  const at = new Date(now.getTime() + Math.round(delay));
  const end = createdAt.getTime() + policy.windowMs;
  if (now.getTime() >= end) return undefined;
  // The last attempt lands on the window's end rather than past it.
  return at.getTime() > end ? new Date(end) : at;
}
