/**
 * How an echo may spell a secret it was sent. Not every transform (a server that changes a secret
 * on purpose always gets it past), but what servers and libraries do without meaning to: repeat
 * it in another case ("invalid token ABC…" of a case-normalising message), JSON-escape it (an
 * error object stringified, by whichever language's encoder), URL-encode it (a URL or form shown back), hex-dump it, base64 it (a decoded and
 * re-encoded Basic or Bearer header, a payload that embeds the request), or decode a Basic one.
 */
export interface Spelling {
  text: string;
  /** Text a server repeats may change case; base64 never does (another case is other bytes). */
  caseless: boolean;
}

/** An encoded spelling shorter than this is not looked for: it would turn up in data by chance. */
const MIN_ENCODED = 8;
/** The shortest token looked for on its own (after `Bearer `, a Basic credential's password). */
const MIN_TOKEN = 6;

/** Every spelling of a credential's value and of the secrets it holds, without repeats. */
export function spellingsOf(value: string): Spelling[] {
  const out = new Map<string, Spelling>();
  const add = (text: string, caseless: boolean) => {
    const key = caseless ? `i${text.toLowerCase()}` : `x${text}`;
    if (text.length > 0 && !out.has(key)) out.set(key, { text, caseless });
  };
  for (const secret of secretsIn(value)) {
    add(secret, true);
    for (const escaped of jsonSpellings(secret)) add(escaped, true);
    add(encodeURIComponent(secret), true);
    // A hex dump of what was sent (a debugging echo), in either case; inside a longer dump it is
    // the same characters, bytes being two digits each.
    add(Buffer.from(secret, 'utf8').toString('hex'), true);
    for (const encoded of base64Spellings(secret)) if (encoded.length >= MIN_ENCODED) add(encoded, false);
  }
  return [...out.values()];
}

/**
 * The secret inside a JSON string as common encoders write it by default: JavaScript's minimal
 * escapes; Python's and PHP's every non-ASCII character as `\uXXXX`, PHP's `/` as `\/` too;
 * .NET's System.Text.Json `+`, `'`, `` ` ``, `<`, `>`, `&`, `"` and non-ASCII as `\uXXXX`; Go's
 * `<`, `>`, `&`, U+2028 and U+2029. Hex digits in either case: the search is caseless for these.
 * A secret with none of those characters has one spelling, and the duplicates are dropped.
 */
function jsonSpellings(secret: string): string[] {
  const minimal = JSON.stringify(secret).slice(1, -1);
  const u = (c: string) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`;
  const asciiOnly = minimal.replace(/[^ -\u007f]/g, u);
  const dotnet = secret.replace(/\\/g, '\\\\').replace(/[^\u0020-\u007e]|[+'`<>&"]/g, u);
  return [minimal, asciiOnly, asciiOnly.replace(/\//g, '\\/'), dotnet, minimal.replace(/[<>&\u2028\u2029]/g, u)];
}

/** The value, the token of `<scheme> <token>` alone, and what a Basic token decodes to (and its password). */
function secretsIn(value: string): string[] {
  const secrets = [value];
  const [, scheme, token] = /^(\S+)\s+(\S+)$/.exec(value) ?? [];
  if (token === undefined || token.length < MIN_TOKEN) return secrets;
  secrets.push(token);
  const decoded = /^basic$/i.test(scheme) ? decodedBasic(token) : undefined;
  if (decoded !== undefined) {
    secrets.push(decoded);
    const password = decoded.slice(decoded.indexOf(':') + 1);
    if (password.length >= MIN_TOKEN) secrets.push(password);
  }
  return secrets;
}

function decodedBasic(token: string): string | undefined {
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(token)) return undefined;
  try {
    const text = new TextDecoder('utf-8', { fatal: true }).decode(Buffer.from(token, 'base64'));
    // eslint-disable-next-line no-control-regex
    return text.includes(':') && !/[\u0000-\u001f\u007f]/.test(text) ? text : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The secret's base64 (standard and URL alphabets, padded and not), and the characters that
 * stand for it inside the base64 of a longer text: there they depend on where it starts, modulo
 * 3 bytes. At each of the three alignments only the characters made of the secret's bits alone
 * are the same whatever surrounds it: the first one or two may also hold the bytes before it,
 * the last the bytes after.
 */
function base64Spellings(secret: string): string[] {
  const bytes = Buffer.from(secret, 'utf8');
  const whole = bytes.toString('base64');
  const forms = [whole, whole.replace(/=+$/, '')];
  for (let shift = 0; shift < 3; shift++) {
    const encoded = Buffer.concat([Buffer.alloc(shift), bytes]).toString('base64');
    forms.push(encoded.slice(Math.ceil((8 * shift) / 6), Math.floor((8 * (shift + bytes.length)) / 6)));
  }
  return forms.flatMap((form) => [form, form.replace(/\+/g, '-').replace(/\//g, '_')]);
}
