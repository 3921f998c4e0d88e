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
