import { MIN_REDACTED_IN_DATA } from './redact-secrets';

const REDACTED = '[redacted]';

/**
 * A saved URL as answers and the audit log show it: every query value `[redacted]` (a parameter
 * without `=`, whole), every path segment shaped like a token `[redacted]`, no fragment and no user
 * name or password; scheme, host, port and the path's other segments as they are. Hosted MCP
 * servers and webhook receivers take their token in the query (`?api_key=`, `?token=`, `?sig=`), and
 * no list of names tells a token from a setting, so every value is hidden; others in the path
 * (Zapier's `/api/mcp/s/<secret>/mcp`, Slack's `/services/T…/B…/<secret>`, Discord's
 * `/api/webhooks/<id>/<secret>`), told by their shape (TOKEN_SEGMENT). A URL without any of these is
 * returned as given. Showing a shown URL changes nothing (`[redacted]` is not token-shaped), so rows
 * and events written before URLs were sealed read the same as new ones.
 */
export function shownUrl(text: string): string {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return REDACTED;
  }
  const path = pathWithoutTokens(url.pathname);
  if (url.search === '' && url.hash === '' && url.username === '' && url.password === '' && path === url.pathname) return text;
  const query = url.search === '' ? '' : `?${url.search.slice(1).split('&').map(redactParameter).join('&')}`;
  return `${url.protocol}//${url.host}${path}${query}`;
}

/** `pathname` with each segment shaped like a token (as sent or decoded) replaced by `marker`. */
export function pathWithoutTokens(pathname: string, marker = REDACTED): string {
  return pathname
    .split('/')
    .map((segment) => (tokensIn(segment).length > 0 ? marker : segment))
    .join('/');
}

/**
 * What in a path segment is shaped like a token: the segment, as sent or decoded, or a part of it
 * between the delimiters RFC 3986 lets a segment hold (`;jsessionid=<token>`, `key:<token>`): such a
 * segment was shown and stored in the clear (attack round 14, P-F3).
 */
function tokensIn(segment: string): string[] {
  const found = new Set<string>();
  for (const whole of new Set([segment, decoded(segment)])) {
    for (const part of [whole, ...whole.split(SEGMENT_DELIMITERS)]) if (TOKEN_SEGMENT.test(part) || mixedCaseLetters(part)) found.add(part);
  }
  return [...found];
}

function redactParameter(part: string): string {
  const eq = part.indexOf('=');
  if (part === '' || eq === part.length - 1) return part;
  return eq < 0 ? REDACTED : `${part.slice(0, eq + 1)}${REDACTED}`;
}

/** Whether `text` holds more than it shows, and must be sealed to be kept. */
export function urlHidesSomething(text: string): boolean {
  return shownUrl(text) !== text;
}

/**
 * The query values of `url`, and its path segments shaped like a token, as secrets for
 * `redactSecrets`: a server that echoes its URL (in an error, a result, a tool's description) must
 * not show the token it was given in it to agent keys and the model. Only values long enough to be
 * a secret: `?v=2` must not take every 2 out of a server's words.
 */
export function urlQuerySecrets(text: string | null | undefined): Record<string, string> {
  if (!text) return {};
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return {};
  }
  const out: Record<string, string> = {};
  let i = 0;
  for (const part of url.search.slice(1).split('&')) {
    // A parameter without `=` is a value in its name's place.
    const eq = part.indexOf('=');
    const raw = eq < 0 ? part : part.slice(eq + 1);
    // As sent and as decoded: an echo may quote either.
    for (const secret of new Set([raw, decoded(raw)])) if (secret.length >= MIN_REDACTED_IN_DATA) out[`url.query.${i++}`] = secret;
  }
  // Hosted servers carry their secret in the path too (`/api/mcp/s/<secret>/mcp`, `/<uuid>/<app>`):
  // a segment shaped like a token, never words such as `mcp` or `v1` (attack round 11, F-F5).
  for (const segment of url.pathname.split('/')) {
    for (const secret of tokensIn(segment)) out[`url.path.${i++}`] = secret;
  }
  return out;
}

/** 16 characters or more of letters, digits and `-_.~+=%`, holding both a letter and a digit. */
const TOKEN_SEGMENT = /^(?=[^/]*[0-9])(?=[^/]*[A-Za-z])[A-Za-z0-9\-_.~+=%]{16,}$/;
/**
 * 20 letters or more, each case at least a quarter of them: a random token without a digit (Slack's
 * 24-character webhook secret has none in about 1.5% of webhooks, attack round 14, P-F3), which
 * TOKEN_SEGMENT leaves shown. Words, CamelCase names (an upper-case letter a word, about one in
 * six) and upper-case acronyms stay shown; a random letter token escapes it about once in 150.
 */
function mixedCaseLetters(part: string): boolean {
  if (part.length < 20 || !/^[A-Za-z]+$/.test(part)) return false;
  const upper = part.replace(/[a-z]/g, '').length;
  return upper * 4 >= part.length && (part.length - upper) * 4 >= part.length;
}

/** The sub-delimiters (and `:`, `@`) a path segment may hold unencoded; `=` too, so `name=<token>` yields the token alone. */
const SEGMENT_DELIMITERS = /[;,:@!$*'()&=]/;

function decoded(raw: string): string {
  try {
    return decodeURIComponent(raw.replace(/\+/g, ' '));
  } catch {
    return raw;
  }
}
