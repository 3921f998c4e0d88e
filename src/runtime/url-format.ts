/**
 * JSON Schema's `format: "url"` as ajv-formats (3.0.1) defines it, matched in time linear in the
 * text. Its one regular expression begins `(?:\S+(?::\S*)?@)?` (user info) before the host, and
 * V8 backtracks through every way of cutting a run of colons and at signs there: an argument of
 * `http://` and 100,000 `::` (200 KB) held the node 27 s, every organization waiting (attack
 * round 18, X-F1). RE2 cannot run it (its host excludes private addresses by lookahead), so the
 * same expression is cut where it is ambiguous: the user info is any text without whitespace
 * ending in `@`, the host and port cannot hold `@`, `/` or `:` but the port's, and the path is the
 * rest from a `/`, without whitespace. Each `/` ends at most one place the host can start (after
 * the last `@` before it), so the host's own expression runs on pieces of the text that do not
 * overlap.
 */

const SCHEME = /^(?:https?|ftp):\/\//i;
/** ajv-formats' host and port, exactly (a host may hold some whitespace above U+00A0, the rest may not). */
const HOST_AND_PORT =
  /^(?:(?!(?:10|127)(?:\.\d{1,3}){3})(?!(?:169\.254|192\.168)(?:\.\d{1,3}){2})(?!172\.(?:1[6-9]|2\d|3[0-1])(?:\.\d{1,3}){2})(?:[1-9]\d?|1\d\d|2[01]\d|22[0-3])(?:\.(?:1?\d{1,2}|2[0-4]\d|25[0-5])){2}(?:\.(?:[1-9]\d?|1\d\d|2[0-4]\d|25[0-4]))|(?:(?:[a-z0-9\u{00a1}-\u{ffff}]+-)*[a-z0-9\u{00a1}-\u{ffff}]+)(?:\.(?:[a-z0-9\u{00a1}-\u{ffff}]+-)*[a-z0-9\u{00a1}-\u{ffff}]+)*(?:\.(?:[a-z\u{00a1}-\u{ffff}]{2,})))(?::\d{2,5})?$/iu;
const SPACE = /\s/u;

export function isUrl(text: string): boolean {
  const scheme = SCHEME.exec(text);
  if (!scheme) return false;
  const rest = text.slice(scheme[0].length);
  const firstSpace = rest.search(SPACE);
  let lastSpace = -1;
  for (let i = rest.length - 1; i >= 0 && firstSpace !== -1; i--) {
    if (SPACE.test(rest[i])) {
      lastSpace = i;
      break;
    }
  }
  // Each piece between two slashes (or the end) holds the host (and port) when the host starts in it.
  for (let from = 0; from <= rest.length;) {
    const slash = rest.indexOf('/', from);
    const end = slash === -1 ? rest.length : slash;
    const at = rest.slice(from, end).lastIndexOf('@');
    // The host starts at the very beginning (no user info) or after an `@` with user info before it: not empty, no whitespace.
    const start = at === -1 ? (from === 0 ? 0 : -1) : from + at + 1;
    const userInfoOk = at === -1 || (start - 1 >= 1 && (firstSpace === -1 || firstSpace >= start - 1));
    if (start !== -1 && userInfoOk && lastSpace < end && HOST_AND_PORT.test(rest.slice(start, end))) return true;
    if (slash === -1) return false;
    from = slash + 1;
  }
  return false;
}
