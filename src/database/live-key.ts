/**
 * The condition on an `api_key` row (`alias.` before its columns when given) that the guard
 * accepts it: not revoked, and not past the expiry its creator gave it. Every check of a key asks
 * this (authentication, a run acting for it, a stream's reads, a change holding it), so a key
 * expires everywhere at once. `statement_timestamp()`, not `now()`: a change that waited inside its
 * transaction (for a lock, a listing) judges the key when it asks, not when the transaction began.
 */
export function liveKeyCondition(alias?: string): string {
  const c = alias ? `${alias}.` : '';
  return `${c}revoked_at IS NULL AND (${c}expires_at IS NULL OR ${c}expires_at > statement_timestamp())`;
}

export const KEY_IS_LIVE = liveKeyCondition();

/**
 * How many live keys organization `$1` holds, as two ranges of `api_key_live_idx` (without an
 * expiry; expiring after now): a condition with OR walked every expired key it ever had (V-F4).
 */
export const COUNT_LIVE_KEYS = `(SELECT count(*) FROM api_key WHERE org_id = $1 AND revoked_at IS NULL AND expires_at IS NULL)
  + (SELECT count(*) FROM api_key WHERE org_id = $1 AND revoked_at IS NULL AND expires_at > statement_timestamp())`;
