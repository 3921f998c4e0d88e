/**
 * A server (or a library) may echo a request back in an error: an MCP server its credentials, a
 * model provider the API key it was sent. No secret leaves in a message that went through here.
 */
export function redactSecrets(message: string, credentials: Readonly<Record<string, string>>): string {
  let out = message;
  for (const value of Object.values(credentials)) {
    if (value.length === 0) continue;
    // The token part of `Bearer <token>` alone, too.
    const token = /^\S+\s+(\S{6,})$/.exec(value)?.[1];
    for (const secret of token ? [value, token] : [value]) {
      for (const form of spellings(secret)) out = out.split(form).join('[redacted]');
    }
  }
  return out;
}

/**
 * A secret as an echo may spell it: as it is, JSON-escaped (a library that stringifies an error
 * object it got: `"sk-a\"b"`), URL-encoded (a server that shows the URL or form it was sent).
 */
function spellings(secret: string): string[] {
  const forms = new Set([secret, JSON.stringify(secret).slice(1, -1), encodeURIComponent(secret)]);
  return [...forms];
}

/** The shortest credential looked for in results and answers (every length is, in error messages). */
export const MIN_REDACTED_IN_DATA = 8;

/**
 * A server may echo a request back in a successful answer too (a debugging server shows the
 * headers it got): every string of a result, keys included, gets the same redaction as a message,
 * before the result is stored, returned to any key that may read the call, or given to a model.
 */
export function redactSecretsDeep<T>(value: T, all: Readonly<Record<string, string>>): T {
  // Data is not cut up for a value too short to be a secret: a key `k` took every k out of answers.
  const credentials = Object.fromEntries(Object.entries(all).filter(([, v]) => v.length >= MIN_REDACTED_IN_DATA));
  if (Object.keys(credentials).length === 0) return value;
  const walk = (v: unknown): unknown => {
    if (typeof v === 'string') return redactSecrets(v, credentials);
    if (Array.isArray(v)) return v.map(walk);
    if (v !== null && typeof v === 'object') {
      // fromEntries defines each key as data: a `__proto__` key stays a key.
      return Object.fromEntries(Object.entries(v).map(([k, inner]) => [redactSecrets(k, credentials), walk(inner)]));
    }
    return v;
  };
  return walk(value) as T;
}
