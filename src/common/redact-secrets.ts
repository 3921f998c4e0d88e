/**
 * A server (or a library) may echo a request back in an error: an MCP server its credentials, a
 * model provider the API key it was sent. No secret leaves in a message that went through here.
 */
export function redactSecrets(message: string, credentials: Readonly<Record<string, string>>): string {
  let out = message;
  for (const value of Object.values(credentials)) {
    if (value.length === 0) continue;
    out = out.split(value).join('[redacted]');
    // The token part of `Bearer <token>` alone, too.
    const token = /^\S+\s+(\S{6,})$/.exec(value)?.[1];
    if (token) out = out.split(token).join('[redacted]');
  }
  return out;
}

/**
 * A server may echo a request back in a successful answer too (a debugging server shows the
 * headers it got): every string of a result, keys included, gets the same redaction as a message,
 * before the result is stored, returned to any key that may read the call, or given to a model.
 */
export function redactSecretsDeep<T>(value: T, credentials: Readonly<Record<string, string>>): T {
  if (!Object.values(credentials).some((v) => v.length > 0)) return value;
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
