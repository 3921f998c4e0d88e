import { findSecrets, secretPattern, SecretPattern } from './secret-search';
import { spellingsOf } from './secret-spellings';

/** What stands where a secret was. */
const REDACTED = '[redacted]';

/** The shortest credential looked for in results and answers (every length is, in error messages). */
export const MIN_REDACTED_IN_DATA = 8;

/**
 * A server (or a library) may echo a request back in an error: an MCP server its credentials, a
 * model provider the API key it was sent. No secret leaves in a message that went through here,
 * in any of the spellings secret-spellings.ts lists.
 */
export function redactSecrets(message: string, credentials: Readonly<Record<string, string>>): string {
  const pattern = patternFor(credentials, 1);
  return pattern ? redactParts([message], pattern)[0] : message;
}

/**
 * A server may echo a request back in a successful answer too (a debugging server shows the
 * headers it got): every string of a result, keys included, gets the same redaction as a message,
 * before the result is stored, returned to any key that may read the call, or given to a model.
 * Strings at the same place in a list (the `text` of each item of a result's `content`) are read
 * as one text, in order, and so are the keys of an object (of the objects at one place in a
 * list): a server that sends its text in chunks may cut a secret in two, and then each part of it
 * is redacted. What holds nothing to redact is returned as it is, not copied.
 */
export function redactSecretsDeep<T>(value: T, credentials: Readonly<Record<string, string>>): T {
  // Data is not cut up for a value too short to be a secret: a key `k` took every k out of answers.
  const pattern = patternFor(credentials, MIN_REDACTED_IN_DATA);
  if (!pattern) return value;
  const walk = new Walk();
  walk.collect(value, undefined);
  if (!walk.redact(pattern)) return value;
  return walk.rebuild(value, undefined) as T;
}

/**
 * Where strings are in a value, list positions left out (`content[].text`): the strings and the
 * keys found there in the order of a walk, read together, then as redacted.
 */
interface Place {
  strings?: string[];
  names?: string[];
  items?: Place;
  keys?: Map<string, Place>;
}

/**
 * The strings and keys of a value by their place, redacted, and the value rebuilt from them in
 * the same order. Places exist only inside lists, where they repeat: a string elsewhere is read
 * alone and an object's keys together, and neither needs one (a result may have a million keys).
 */
class Walk {
  /** Strings, and objects' keys, outside any list. */
  private readonly loose: string[][] = [];
  /** The places of the lists outside any list. */
  private readonly lists: Place[] = [];
  private nextLoose = 0;
  private nextList = 0;
  /** How many strings and keys of each place the rebuild has taken. */
  private readonly taken = new Map<string[], number>();

  collect(v: unknown, at: Place | undefined): void {
    if (typeof v === 'string') {
      if (at) (at.strings ??= []).push(v);
      else this.loose.push([v]);
    } else if (Array.isArray(v)) {
      let items = at?.items;
      if (!items) {
        items = {};
        if (at) at.items = items;
        else this.lists.push(items);
      }
      for (let i = 0; i < v.length; i++) this.collect(v[i], items);
    } else if (v !== null && typeof v === 'object') {
      const names = at ? (at.names ??= []) : [];
      if (!at) this.loose.push(names);
      for (const k of Object.keys(v)) {
        names.push(k);
        let inner: Place | undefined;
        if (at) {
          inner = (at.keys ??= new Map<string, Place>()).get(k);
          if (!inner) at.keys.set(k, (inner = {}));
        }
        this.collect((v as Record<string, unknown>)[k], inner);
      }
    }
  }

  /** Whether anything was redacted. */
  redact(pattern: SecretPattern): boolean {
    let changed = false;
    const each = (texts: string[]): string[] => {
      const redacted = redactParts(texts, pattern);
      changed ||= redacted !== texts;
      return redacted;
    };
    this.loose.forEach((texts, i) => (this.loose[i] = each(texts)));
    const inPlace = (at: Place): void => {
      if (at.strings) at.strings = each(at.strings);
      if (at.names) at.names = each(at.names);
      if (at.items) inPlace(at.items);
      for (const inner of at.keys?.values() ?? []) inPlace(inner);
    };
    this.lists.forEach(inPlace);
    return changed;
  }

  /** The value with what was redacted, copying only what holds a change. */
  rebuild(v: unknown, at: Place | undefined): unknown {
    if (typeof v === 'string') return at ? this.take(at.strings!) : this.loose[this.nextLoose++][0];
    if (v === null || typeof v !== 'object') return v;
    let differs = false;
    if (Array.isArray(v)) {
      const place = at ? at.items! : this.lists[this.nextList++];
      const items = [];
      for (let i = 0; i < v.length; i++) {
        items.push(this.rebuild(v[i], place));
        differs ||= items[i] !== v[i];
      }
      return differs ? items : v;
    }
    const names = at ? at.names! : this.loose[this.nextLoose++];
    const entries = Object.keys(v).map((k, i) => {
      const key = at ? this.take(names) : names[i];
      const inner = (v as Record<string, unknown>)[k];
      const out = this.rebuild(inner, at?.keys!.get(k));
      differs ||= key !== k || out !== inner;
      return [key, out] as const;
    });
    // fromEntries defines each key as data: a `__proto__` key stays a key.
    return differs ? Object.fromEntries(entries) : v;
  }

  private take(texts: string[]): string {
    const next = this.taken.get(texts) ?? 0;
    this.taken.set(texts, next + 1);
    return texts[next];
  }
}

/**
 * The parts with every spelling of a secret in their concatenation redacted: one found within a
 * part is replaced there, one across parts has each part's share of it replaced. One pass of the
 * pattern over the text, and a copy only when there are several parts. The same array when
 * nothing was found.
 */
function redactParts(parts: string[], pattern: SecretPattern): string[] {
  if (parts.length === 0) return parts;
  const found = findSecrets(parts.length === 1 ? parts[0] : parts.join(''), pattern);
  if (found.length === 0) return parts;
  const out = parts.slice();
  let p = 0;
  let start = 0;
  let cuts: [number, number][] = [];
  // Each part with the ranges that fall in it, in order; ranges do not overlap.
  const flush = () => {
    if (cuts.length === 0) return;
    let text = '';
    let at = 0;
    for (const [from, to] of cuts) {
      text += parts[p].slice(at, from) + REDACTED;
      at = to;
    }
    out[p] = text + parts[p].slice(at);
    cuts = [];
  };
  for (const [from, to] of found) {
    for (;;) {
      const end = start + parts[p].length;
      // An empty part inside a secret stays empty.
      if (from < end && to > start && end > start) cuts.push([Math.max(from, start) - start, Math.min(to, end) - start]);
      if (to <= end) break;
      flush();
      start = end;
      p++;
    }
  }
  flush();
  return out;
}

/**
 * Built once per set of credentials (a tool list redacts hundreds of strings with the same), and
 * checked against the values on each use, so an object changed since cannot get a stale pattern.
 */
const built = new Map<number, WeakMap<object, { key: string; pattern: SecretPattern | undefined }>>();

function patternFor(credentials: Readonly<Record<string, string>>, minLength: number): SecretPattern | undefined {
  const values = Object.values(credentials).filter((v) => v.length >= minLength);
  const key = values.join('\u0000');
  let cache = built.get(minLength);
  if (!cache) built.set(minLength, (cache = new WeakMap()));
  const hit = cache.get(credentials);
  if (hit && hit.key === key) return hit.pattern;
  const pattern = secretPattern(values.map(spellingsOf));
  cache.set(credentials, { key, pattern });
  return pattern;
}
