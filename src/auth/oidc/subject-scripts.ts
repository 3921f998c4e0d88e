/**
 * Mixed-script subjects, refused as UTS #39 (section 5.2) "highly restrictive" does: every letter of
 * one script, or of Latin with Han and Hiragana and Katakana, with Han and Bopomofo, or with Han and
 * Hangul; characters of every script (Common: digits, punctuation; Inherited: combining marks) go
 * with any. `alice` with a Cyrillic а was another person shown as alice.
 *
 * A character's scripts are its Script_Extensions (U+30FC, the prolonged sound mark, is Hiragana
 * and Katakana). Each check is one anchored character class over the subject: linear time.
 */

/**
 * The scripts of Unicode 16, by their property value names. A name the running V8 does not know
 * (an older Unicode) is skipped; a letter of a script missing here (a newer one), unassigned or
 * private use matches none, and the subject is refused: its script cannot be told.
 */
const SCRIPT_NAMES = (
  'Adlam Ahom Anatolian_Hieroglyphs Arabic Armenian Avestan Balinese Bamum Bassa_Vah Batak Bengali Bhaiksuki Bopomofo Brahmi ' +
  'Braille Buginese Buhid Canadian_Aboriginal Carian Caucasian_Albanian Chakma Cham Cherokee Chorasmian Coptic Cuneiform Cypriot ' +
  'Cypro_Minoan Cyrillic Deseret Devanagari Dives_Akuru Dogra Duployan Egyptian_Hieroglyphs Elbasan Elymaic Ethiopic Garay Georgian ' +
  'Glagolitic Gothic Grantha Greek Gujarati Gunjala_Gondi Gurmukhi Gurung_Khema Han Hangul Hanifi_Rohingya Hanunoo Hatran Hebrew ' +
  'Hiragana Imperial_Aramaic Inscriptional_Pahlavi Inscriptional_Parthian Javanese Kaithi Kannada Katakana Kawi Kayah_Li Kharoshthi ' +
  'Khitan_Small_Script Khmer Khojki Khudawadi Kirat_Rai Lao Latin Lepcha Limbu Linear_A Linear_B Lisu Lycian Lydian Mahajani Makasar ' +
  'Malayalam Mandaic Manichaean Marchen Masaram_Gondi Medefaidrin Meetei_Mayek Mende_Kikakui Meroitic_Cursive Meroitic_Hieroglyphs ' +
  'Miao Modi Mongolian Mro Multani Myanmar Nabataean Nag_Mundari Nandinagari New_Tai_Lue Newa Nko Nushu Nyiakeng_Puachue_Hmong Ogham ' +
  'Ol_Chiki Ol_Onal Old_Hungarian Old_Italic Old_North_Arabian Old_Permic Old_Persian Old_Sogdian Old_South_Arabian Old_Turkic ' +
  'Old_Uyghur Oriya Osage Osmanya Pahawh_Hmong Palmyrene Pau_Cin_Hau Phags_Pa Phoenician Psalter_Pahlavi Rejang Runic Samaritan ' +
  'Saurashtra Sharada Shavian Siddham SignWriting Sinhala Sogdian Sora_Sompeng Soyombo Sundanese Sunuwar Syloti_Nagri Syriac Tagalog ' +
  'Tagbanwa Tai_Le Tai_Tham Tai_Viet Takri Tamil Tangsa Tangut Telugu Thaana Thai Tibetan Tifinagh Tirhuta Todhri Toto Tulu_Tigalari ' +
  'Ugaritic Vai Vithkuqi Wancho Warang_Citi Yezidi Yi Zanabazar_Square'
).split(' ');

/** The sets of scripts one subject may mix, besides a script alone. */
const MIXES = [
  ['Latin', 'Han', 'Hiragana', 'Katakana'],
  ['Latin', 'Han', 'Bopomofo'],
  ['Latin', 'Han', 'Hangul'],
];

const ANY_SCRIPT = '\\p{Script_Extensions=Common}\\p{Script_Extensions=Inherited}';
const NEUTRAL = new RegExp(`[${ANY_SCRIPT}]`, 'u');

const scriptOf = new Map<string, RegExp>();
for (const name of SCRIPT_NAMES) {
  try {
    scriptOf.set(name, new RegExp(`\\p{Script_Extensions=${name}}`, 'u'));
  } catch {
    // Not in this runtime's Unicode: no character of it is known to it either.
  }
}

const within = new Map<string, RegExp>();
/** Whether every character of `text` is of one of `scripts`, or of any. */
function onlyOf(text: string, scripts: readonly string[]): boolean {
  const key = scripts.join(' ');
  let re = within.get(key);
  if (!re) within.set(key, (re = new RegExp(`^[${ANY_SCRIPT}${scripts.map((s) => `\\p{Script_Extensions=${s}}`).join('')}]*$`, 'u')));
  return re.test(text);
}

/** Whether the subject's letters keep to one script, or to a mix UTS #39 "highly restrictive" allows. */
export function isSingleScript(text: string): boolean {
  // The first character of a script names the candidates: its scripts, and the mixes holding one of them.
  const first = [...text].find((c) => !NEUTRAL.test(c));
  if (first === undefined) return true;
  const scripts = [...scriptOf].filter(([, re]) => re.test(first)).map(([name]) => name);
  const candidates = [...scripts.map((s) => [s]), ...MIXES.filter((mix) => mix.some((s) => scripts.includes(s)))];
  return candidates.some((scriptsOfMix) => onlyOf(text, scriptsOfMix));
}
