import { ApiError } from '../common/api-error';

/** What a route that saves a URL answers when it refuses one (assertAllowed), for its OpenAPI document. */
export const SAVED_URL_REFUSALS = {
  invalid:
    'not an absolute URL, or one nothing can be sent to: spaces or control characters, port 0, a host name ending in a dot, longer than 253 characters or with a label longer than 63, or a URL longer than 2,048 characters once its characters outside ASCII are percent-encoded (`invalid_request`, code `url`)',
  refused:
    'refused by the egress policy (`egress_refused`): a scheme other than `https:` or `http:`, a user name or password, plain `http:` to a host not in EGRESS_ALLOWED_HOSTS, or an address the policy refuses however it is spelled',
};

/**
 * The URL a saved value names, when something could be sent to it. The URL parser drops spaces at
 * either end and tabs and newlines anywhere, so the text stored would not be what is reached; port
 * 0 reaches nothing; a host name ending in a dot is judged by the policy as the name without it
 * (so a listed host's allowance covers it) while the resolver looks it up as another name
 * (`localhost.` was saved, then failed every delivery as not found); a host name DNS cannot carry
 * (past 253 characters, or a label past 63) is never found, and getaddrinfo refused one of 256
 * characters with EINVAL, which the save answered 500 (attack round 11, F-F1); and a URL is at most
 * MAX_URL_CHARS as written.
 */
export function deliverableUrl(text: string, field: string): URL {
  const refuse = (message: string) => ApiError.invalidRequest([{ path: field, code: 'url', message }]);
  // eslint-disable-next-line no-control-regex
  if (/[\s\x00-\x1f\x7f]/.test(text)) throw refuse(`${field} must not contain spaces or control characters`);
  let parsed: URL;
  try {
    parsed = new URL(text);
  } catch {
    throw refuse(`${field} must be an absolute URL`);
  }
  if (parsed.port === '0') throw refuse(`${field} must not name port 0`);
  if (parsed.hostname.endsWith('.')) throw refuse(`${field}'s host must not end with a dot; write ${parsed.hostname.replace(/\.+$/, '')}`);
  if (!parsed.hostname.startsWith('[') && (parsed.hostname.length > 253 || parsed.hostname.split('.').some((label) => label.length > 63))) {
    throw refuse(`${field}'s host must be at most 253 characters, each label at most 63`);
  }
  // The parser writes what is sent: each character outside ASCII percent-encoded, up to nine
  // characters for one given (U+4E00 is `%E4%B8%80`). A webhook URL of 2,048 characters passed its
  // DTO's 2,048 and was stored, answered and sent as 18,248 (attack round 20, AA-F3).
  if (parsed.href.length > MAX_URL_CHARS) {
    throw refuse(`${field} must be at most ${MAX_URL_CHARS} characters as it is sent (characters outside ASCII are sent percent-encoded, up to 9 each)`);
  }
  return parsed;
}

/** The longest URL a route saves, as the URL parser writes it (what is stored, answered and sent). */
export const MAX_URL_CHARS = 2048;
