import { hash, randomBytes, timingSafeEqual } from 'node:crypto';

/** Visible prefix: a leaked token is recognizable in logs and by secret scanners. */
export const API_KEY_PREFIX = 'cpk_';

/**
 * The token of an `Authorization: Bearer <token>` header; undefined for none or any other form.
 * The guard and the check before the body is read (anonymous-requests.ts) agree through this.
 */
export function bearerTokenOf(header: string | undefined): string | undefined {
  return /^Bearer\s+(\S+)\s*$/i.exec(header ?? '')?.[1];
}

export function generateApiKeyToken(): string {
  return API_KEY_PREFIX + randomBytes(32).toString('base64url');
}

// `hash` is the one-shot form (Node 20.12): a quarter of createHash's time for a short input, and
// every authenticated request hashes its key.
export function hashToken(token: string): string {
  return hash('sha256', token, 'hex');
}

/** Compares two tokens by their digests, in time independent of where they differ. */
export function tokensEqual(a: string, b: string): boolean {
  return timingSafeEqual(hash('sha256', a, 'buffer'), hash('sha256', b, 'buffer'));
}

/** What a list shows of a key: enough to recognize it, never enough to use it. */
export function displayPrefix(token: string): string {
  return token.slice(0, API_KEY_PREFIX.length + 6);
}
