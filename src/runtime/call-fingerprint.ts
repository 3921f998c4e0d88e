import { canonicalJson } from '../agents/canonical-json';
import { textHash } from '../agents/digests';
import { findNonFiniteNumber } from '../common/json-numbers';

/** What a keyed call's idempotency key is bound to, and its arguments' canonical JSON, written once for both. */
export interface CallFingerprint {
  fingerprint: string;
  /** The arguments as canonicalized: their hash, once validated, unless validation made them anew. */
  argumentsText: string;
}

/**
 * The call's canonical JSON (RFC 8785) and its hash, keys in sorted order around the arguments' own
 * text: the same bytes as canonicalizing `{agentId, arguments, runId, tool, version}` whole, which
 * keys stored before were bound to, without writing the arguments twice (attack round 13, K-F7).
 * Arguments holding a number past a double's range cannot be hashed (RFC 8785 has no Infinity) and
 * are refused by validation whatever the key: there is nothing to claim the key for. Looked for
 * only when hashing fails, so a keyed call walks its arguments once here.
 */
export function callFingerprint(call: {
  agentId: string;
  tool: string;
  arguments: unknown;
  version?: number | 'latest';
  runId?: string | null;
}): CallFingerprint | undefined {
  let argumentsText: string;
  try {
    argumentsText = canonicalJson(call.arguments ?? null);
  } catch (err) {
    if (findNonFiniteNumber(call.arguments)) return undefined;
    throw err;
  }
  const text =
    `{"agentId":${JSON.stringify(call.agentId)},"arguments":${argumentsText},"runId":${JSON.stringify(call.runId ?? null)},` +
    `"tool":${JSON.stringify(call.tool)},"version":${canonicalJson(call.version ?? 'latest')}}`;
  return { fingerprint: textHash(text), argumentsText };
}
