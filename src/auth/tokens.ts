import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

/** Visible prefix: a leaked token is recognizable in logs and by secret scanners. */
export const API_KEY_PREFIX = 'cpk_';

export function generateApiKeyToken(): string {
  return API_KEY_PREFIX + randomBytes(32).toString('base64url');
}

export function hashToken(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}

/** Compares two tokens by their digests, in time independent of where they differ. */
export function tokensEqual(a: string, b: string): boolean {
  return timingSafeEqual(createHash('sha256').update(a).digest(), createHash('sha256').update(b).digest());
}

/** What a list shows of a key: enough to recognize it, never enough to use it. */
export function displayPrefix(token: string): string {
  return token.slice(0, API_KEY_PREFIX.length + 6);
}
