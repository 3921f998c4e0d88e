import { ApiError, type FieldError } from '../../common/api-error';
import type { RegisteredMcpServer } from '../mcp-server-registry.service';

const MAX_CREDENTIAL_CHARS = 8192;
const MAX_CREDENTIALS = 20;

/** The credentials a request gives, checked against the entry's fields; problems go to `errors`. */
export function parseCredentials(
  entry: RegisteredMcpServer,
  given: Record<string, unknown> | undefined,
  path: string,
  errors: FieldError[],
): Record<string, string> {
  const out: Record<string, string> = {};
  const fields = new Map(entry.definition.credentials.map((f) => [f.name, f]));
  const keys = given === undefined ? [] : Object.keys(given);
  if (keys.length > MAX_CREDENTIALS) {
    errors.push({ path, code: 'too_many', message: `at most ${MAX_CREDENTIALS} credentials` });
    return out;
  }
  for (const key of keys) {
    const at = `${path}.${key}`;
    const field = fields.get(key);
    if (!field) {
      errors.push({
        path: at,
        code: 'unknown_credential',
        message: `the "${entry.definition.id}" server has no credential named "${key}"${fields.size > 0 ? ` (it has: ${[...fields.keys()].join(', ')})` : ''}`,
      });
      continue;
    }
    const value = given![key];
    // The value is never echoed back in a message: it is a secret even when it is malformed.
    if (typeof value !== 'string') errors.push({ path: at, code: 'type', message: `${at} must be a string` });
    else if (value.length === 0 || value.length > MAX_CREDENTIAL_CHARS)
      errors.push({ path: at, code: 'length', message: `${at} must be 1 to ${MAX_CREDENTIAL_CHARS} characters` });
    // eslint-disable-next-line no-control-regex
    else if (/[\u0000-\u001f\u007f]/.test(value))
      errors.push({ path: at, code: 'control_character', message: `${at} must not hold control characters (line breaks would inject headers)` });
    else if (field.header && /[^\u0020-\u00ff]/.test(value))
      errors.push({ path: at, code: 'not_latin1', message: `${at} is sent as an HTTP header and must be printable Latin-1` });
    else out[key] = value;
  }
  for (const field of entry.definition.credentials) {
    if (field.required && !(given && Object.prototype.hasOwnProperty.call(given, field.name)))
      errors.push({ path: `${path}.${field.name}`, code: 'required', message: `the "${entry.definition.id}" server needs the "${field.name}" credential` });
  }
  return out;
}

/** The credentials a request gives in place of the stored ones, or a 400 naming each problem. */
export function givenCredentials(entry: RegisteredMcpServer, given: Record<string, unknown>): Record<string, string> {
  const errors: FieldError[] = [];
  const credentials = parseCredentials(entry, given, 'credentials', errors);
  if (errors.length > 0) throw ApiError.invalidRequest(errors);
  return credentials;
}

/**
 * The credentials to send to a connection moving to `url`: those given, else the stored ones, which
 * go only to the origin they were given for, as a redirect to another origin drops `Authorization`
 * (EgressService). Moving a connection elsewhere with them sent the vendor's token to any server an
 * admin named, a secret the product never shows again (attack round 11, F-F2): another origin
 * needs the credentials for it (`{}` for none).
 */
export function credentialsAt(
  target: { credentials: Readonly<Record<string, string>>; url: string | null },
  url: string,
  given: Record<string, string> | undefined,
): Readonly<Record<string, string>> {
  if (given !== undefined) return given;
  if (Object.keys(target.credentials).length === 0 || target.url === null) return target.credentials;
  const from = new URL(target.url).origin;
  const to = new URL(url).origin;
  if (from === to) return target.credentials;
  throw ApiError.invalidRequest([
    {
      path: 'credentials',
      code: 'required',
      message: `the connection moves from ${from} to ${to}; its stored credentials are sent only to ${from}: give the credentials for the new address ({} for none)`,
    },
  ]);
}

/**
 * A move without credentials given, judged again as the locked row stands when it commits: the
 * new address lists its tools for as long as its server likes, and credentials stored meanwhile
 * (an admin adding the vendor's token) stayed on the row the move pointed at that address, and
 * went there (attack round 14, O-F1). `409 conflict`, nothing changed.
 */
export function stillMovable(now: { credentials: Readonly<Record<string, string>>; url: string | null }, url: string): void {
  try {
    credentialsAt(now, url, undefined);
  } catch (err) {
    if (!(err instanceof ApiError)) throw err;
    throw new ApiError(
      'conflict',
      'The connection was given credentials, or moved, while its tools were listed at the new address, and its stored credentials are sent only to their own origin. Nothing was changed: move it again with the credentials for the new address ({} for none).',
      [
        {
          path: 'credentials',
          code: 'required',
          message: 'the connection now holds credentials for another origin; give the credentials for the new address ({} for none)',
        },
      ],
    );
  }
}
