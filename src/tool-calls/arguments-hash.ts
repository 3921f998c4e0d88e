import { createHash } from 'node:crypto';
import { canonicalize } from 'json-canonicalize';

/**
 * SHA-256 hex of the RFC 8785 canonical JSON of a value. Approvals bind to this hash of the
 * validated arguments, so key order and number spelling never make two equal argument sets differ.
 */
export function canonicalHash(value: unknown): string {
  return createHash('sha256').update(canonicalize(value), 'utf8').digest('hex');
}
