import { Spelling } from './secret-spellings';

/**
 * Finds every spelling of a set of secrets in a text in time linear in the text, whatever the
 * secrets: they are chosen by whoever saves a credential, and the text (a tool's result, up to
 * 64 MiB) by the server it is sent to, the same person. Looking for each spelling with indexOf
 * or a regular expression costs the text's length times the spelling's when both repeat one
 * character: a credential of 8,000 characters held a node 50 s on a 16 MiB result.
 *
 * So regular expressions look only for a short piece of each spelling (its anchor, chosen to
 * occur once in it), and each place one is found is compared with the whole spelling outward
 * from there: such a comparison cannot run past another place where the anchor is (the
 * spelling would hold it twice), so the comparisons together read each character of the text
 * about twice. A spelling whose every piece repeats has no such anchor; for it, and for any
 * text that makes the search do more than about that much work, the whole text counts as the
 * secret: it is redacted rather than searched further.
 */
export interface SecretPattern {
  /** Anchors of spellings that may change case (`gi`), and of those that may not (`g`). */
  anchors: RegExp[];
  /** Where a spelling may be, by its anchor (folded to lower case). */
  byAnchor: Map<string, Candidate[]>;
  /** The lengths of the anchors. */
  widths: number[];
}

interface Candidate {
  /** Folded to lower case when caseless. */
  text: string;
  caseless: boolean;
  /** Where its anchor is in it. */
  offset: number;
}

/** The longest anchor. Shorter ones make the regular expressions cheaper on text that almost matches. */
const MAX_ANCHOR = 32;
/** What a place where an anchor is found counts against the budget, besides its comparisons. */
const HIT_COST = 64;

/**
 * `secrets`: the spellings of each secret. The spellings of one secret share anchors where they
 * can (`Bearer <token>` holds the token, the base64 of one holds that of the other at the same
 * alignment), so that the regular expressions, whose cost grows with their alternatives, stay short.
 */
export function secretPattern(secrets: Spelling[][]): SecretPattern | undefined {
  const byAnchor = new Map<string, Candidate[]>();
  const caseless = new Set<string>();
  const exact = new Map<string, string>();
  const widths = new Set<number>();
  for (const spellings of secrets.filter((s) => s.length > 0)) {
    // One length for the anchors of a secret, so that they can be shared.
    const width = Math.min(MAX_ANCHOR, ...spellings.map((s) => s.text.length));
    widths.add(width);
    const keys: string[] = [];
    for (const spelling of [...spellings].sort((a, b) => a.text.length - b.text.length)) {
      const folded = fold(spelling.text);
      let key = keys.find((k) => uniquelyAt(folded, k) >= 0);
      if (key === undefined) keys.push((key = anchorOf(folded, width)));
      const unique = uniquelyAt(folded, key);
      const offset = unique >= 0 ? unique : folded.lastIndexOf(key);
      const candidates = byAnchor.get(key) ?? [];
      byAnchor.set(key, [...candidates, { text: spelling.caseless ? folded : spelling.text, caseless: spelling.caseless, offset }]);
      if (spelling.caseless) caseless.add(key);
      else exact.set(spelling.text.slice(offset, offset + width), key);
    }
  }
  if (byAnchor.size === 0) return undefined;
  const regex = (alternatives: string[], flags: string) =>
    // Sorted, so that V8 merges the alternatives that begin alike into one branch.
    new RegExp(
      alternatives
        .sort()
        .map((a) => a.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&'))
        .join('|'),
      flags,
    );
  // The case-insensitive search finds the exact anchors it holds already.
  const exactOnly = [...exact].filter(([, key]) => !caseless.has(key)).map(([anchor]) => anchor);
  // No regular expression without alternatives: an empty one is found everywhere.
  const anchors = [...(caseless.size > 0 ? [regex([...caseless], 'gi')] : []), ...(exactOnly.length > 0 ? [regex(exactOnly, 'g')] : [])];
  return { anchors, byAnchor, widths: [...widths] };
}

/**
 * Where the spellings are in the text: sorted ranges that do not overlap. A range of the whole
 * text when finding them would take more than linear work (see SecretPattern).
 */
export function findSecrets(text: string, { anchors, byAnchor, widths }: SecretPattern): [number, number][] {
  // Starts and ends, flat: one periodic secret can be found at every other character.
  const found: number[] = [];
  let budget = 2 * text.length + (1 << 20);
  for (const regex of anchors) {
    regex.lastIndex = 0;
    for (let hit = regex.exec(text); hit !== null; hit = regex.exec(text)) {
      const at = hit.index;
      // The expression names one anchor found here; others, shorter or longer, may be here too.
      for (const width of widths) {
        budget -= HIT_COST;
        for (const candidate of byAnchor.get(fold(text.slice(at, at + width))) ?? []) {
          const start = at - candidate.offset;
          const end = start + candidate.text.length;
          if (start < 0 || end > text.length) continue;
          const compared = compareAt(text, start, candidate);
          budget -= Math.abs(compared);
          if (compared < 0) continue;
          // Found in the order of their anchors, mostly of their starts too: joined at once when they touch.
          const last = found.length - 1;
          if (last > 0 && start >= found[last - 1] && start <= found[last]) found[last] = Math.max(found[last], end);
          else found.push(start, end);
        }
      }
      if (budget < 0) return text.length === 0 ? [] : [[0, text.length]];
      // The next anchor may begin inside this one.
      regex.lastIndex = at + 1;
    }
  }
  const ranges: [number, number][] = [];
  for (let i = 0; i < found.length; i += 2) ranges.push([found[i], found[i + 1]]);
  ranges.sort((a, b) => a[0] - b[0]);
  const merged: [number, number][] = [];
  for (const [from, to] of ranges) {
    const last = merged[merged.length - 1];
    if (last && from <= last[1]) last[1] = Math.max(last[1], to);
    else merged.push([from, to]);
  }
  return merged;
}

/**
 * The characters compared, outward from the anchor (its own again: the regular expression's
 * case-folding is not quite ours); negative when the text does not spell the candidate there.
 */
function compareAt(text: string, start: number, { text: spelling, caseless, offset }: Candidate): number {
  let steps = 0;
  const same = (i: number) => {
    steps++;
    const c = text.charCodeAt(start + i);
    return (caseless ? foldChar(c) : c) === spelling.charCodeAt(i);
  };
  for (let i = offset; i < spelling.length; i++) if (!same(i)) return -steps;
  for (let i = offset - 1; i >= 0; i--) if (!same(i)) return -steps;
  return steps;
}

/** Where `piece` is in `folded` when it is there once, else -1. */
function uniquelyAt(folded: string, piece: string): number {
  const at = folded.indexOf(piece);
  return at >= 0 && folded.indexOf(piece, at + 1) === -1 ? at : -1;
}

/**
 * A piece of the spelling, `width` long, found nowhere else in it (case-folded), if one of a few
 * tried is: near the end first, the most random part of a key ("Bearer sk-" and a JWT's header are
 * what many share), but before the last 3 characters, where the base64 of a secret ends
 * differently padded or cut. A few only: each try reads the spelling up to `width` times over.
 */
function anchorOf(folded: string, width: number): string {
  const last = folded.length - width;
  const tries = [Math.max(0, last - 3), last, 0, ...[1, 2, 3, 4, 5].map((k) => Math.floor((k * last) / 6))];
  const offset = tries.find((at) => uniquelyAt(folded, folded.slice(at, at + width)) === at) ?? last;
  return folded.slice(offset, offset + width);
}

/** Lower case, one UTF-16 unit for one (toLowerCase makes two of `İ`), so that offsets stay put. */
function fold(text: string): string {
  // eslint-disable-next-line no-control-regex
  if (/^[\u0000-\u007f]*$/.test(text)) return text.toLowerCase();
  let out = '';
  for (let i = 0; i < text.length; i++) out += String.fromCharCode(foldChar(text.charCodeAt(i)));
  return out;
}

function foldChar(c: number): number {
  if (c >= 65 && c <= 90) return c + 32;
  if (c < 128) return c;
  const lower = String.fromCharCode(c).toLowerCase();
  return lower.length === 1 ? lower.charCodeAt(0) : c;
}
