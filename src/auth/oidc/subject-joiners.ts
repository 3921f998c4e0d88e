/**
 * U+200D ZERO WIDTH JOINER and U+200C ZERO WIDTH NON-JOINER in a subject. Most of the time they show
 * as nothing: `al\u200cice` and `alice\u200d` were other people shown as alice, and `\u200d` a person
 * shown as no one. A joiner is kept only where it changes what is shown:
 *
 * - after a virama (Canonical_Combining_Class 9), either joiner: it asks for a half form or a visible
 *   virama instead of a conjunct (`क्\u200dष`, `ന്\u200c`). IDNA 2008 allows both there (RFC 5892,
 *   appendix A.1 and A.2, CONTEXTJ).
 * - ZWNJ between two letters that would join, which it keeps apart (Persian `می\u200cخواهم`): the
 *   other context of A.1, `(L|D) T* ZWNJ T* (R|D)` by Joining_Type.
 * - ZWJ inside an emoji ZWJ sequence Unicode recommends for general interchange (RGI: a family is one
 *   picture). Elsewhere between emoji it shows as the emoji side by side: refused.
 *
 * Regular expressions cannot name Canonical_Combining_Class or Joining_Type. The viramas are found
 * by the runtime's own normalization (below), so every script it knows is covered. The joining letters
 * are those of the Arabic and Arabic Supplement blocks, copied from ArabicShaping.txt: they write
 * Persian, Urdu, Kurdish, Pashto and the other languages where ZWNJ is everyday spelling. Beside a
 * letter of another joining script (Syriac, N'Ko, Mongolian...) ZWNJ is refused. That is stricter than
 * IDNA, never looser. (Node's `url.domainToASCII` checks CONTEXTJ too, but looser: it passes a label
 * at its first joiner after a virama, and a ZWNJ with a dual-joining letter anywhere before it.)
 */

const ZWJ = '\u200d';
const ZWNJ = '\u200c';
const JOINER = /[\u200c\u200d]/u;
/** A property of strings, so the `v` flag; built from a string, as the compiler targets ES2022. */
const EMOJI_ZWJ_SEQUENCE = new RegExp('\\p{RGI_Emoji_ZWJ_Sequence}', 'gv');
/** Stands in for such a sequence: no letter, mark or virama, so a joiner beside it has no context. */
const PICTURE = '\ufffc';
/** Joining_Type T (transparent): marks, which may come between a ZWNJ and the letters it separates. */
const TRANSPARENT = /^[\p{Mn}\p{Me}]$/u;
/** Joining_Type D (dual joining): joins the letter after it and the one before (the blocks have no L). */
const DUAL_JOINING =
  /^[\u0620\u0626\u0628\u062a-\u062e\u0633-\u063f\u0641-\u0647\u0649\u064a\u066e\u066f\u0678-\u0687\u069a-\u06bf\u06c1\u06c2\u06cc\u06ce\u06d0\u06d1\u06fa-\u06fc\u06ff\u0750-\u0758\u075c-\u076a\u076d-\u0770\u0772\u0775-\u0777\u077a-\u077f]$/u;
/** Joining_Type R (right joining): joins only the letter before it (alef, dal, reh, waw...). */
const RIGHT_JOINING =
  /^[\u0622-\u0625\u0627\u0629\u062f-\u0632\u0648\u0671-\u0673\u0675-\u0677\u0688-\u0699\u06c0\u06c3-\u06cb\u06cd\u06cf\u06d2\u06d3\u06d5\u06ee\u06ef\u0759-\u075b\u076b\u076c\u0771\u0773\u0774\u0778\u0779]$/u;

/** Marks of combining classes 8 (U+3099) and 10 (U+05B0), the neighbours of the virama's class 9. */
const CLASS_8 = '\u3099';
const CLASS_10 = '\u05b0';

/**
 * Whether `c` is a virama (Canonical_Combining_Class 9). Canonical ordering (NFD) sorts adjacent marks
 * by class, so `c` moves before a mark of class 8 only if its class is above 8, and after one of class
 * 10 only if its class is below 10 and not 0: both, only for class 9.
 */
export function isVirama(c: string): boolean {
  if (c === CLASS_8 || c === CLASS_10) return false;
  return (c + CLASS_8).normalize('NFD') === CLASS_8 + c && (CLASS_10 + c).normalize('NFD') === c + CLASS_10;
}

/** Whether every joiner of `text` is in a context above, where it shows. */
export function joinersInContext(text: string): boolean {
  if (!JOINER.test(text)) return true;
  const chars = [...text.replace(EMOJI_ZWJ_SEQUENCE, PICTURE)];
  return chars.every((c, i) => (c !== ZWJ && c !== ZWNJ) || (i > 0 && isVirama(chars[i - 1])) || (c === ZWNJ && separatesJoiningLetters(chars, i)));
}

/** RFC 5892 A.1's `(Joining_Type:{L,D})(Joining_Type:T)*\u200C(Joining_Type:T)*(Joining_Type:{R,D})`. */
function separatesJoiningLetters(chars: readonly string[], at: number): boolean {
  let before = at - 1;
  while (before >= 0 && TRANSPARENT.test(chars[before])) before--;
  let after = at + 1;
  while (after < chars.length && TRANSPARENT.test(chars[after])) after++;
  if (before < 0 || after >= chars.length) return false;
  return DUAL_JOINING.test(chars[before]) && (DUAL_JOINING.test(chars[after]) || RIGHT_JOINING.test(chars[after]));
}
