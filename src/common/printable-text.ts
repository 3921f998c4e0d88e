import { ValidateBy } from 'class-validator';

/**
 * Control characters (C0, DEL and C1, whose U+009B starts a terminal escape), line and paragraph
 * separators, and format characters (bidi overrides and isolates, marks, invisible ones), with
 * which one name would display as another or rewrite the line it is shown on. Zero-width joiners
 * are left to the caller: some scripts and emoji sequences need them.
 */
export const UNPRINTABLE = /[\p{Cc}\p{Zl}\p{Zp}]|(?![\u200c\u200d])\p{Cf}/u;
/**
 * Anything else that shows as nothing (default-ignorable code points: a combining grapheme joiner,
 * variation selectors, Hangul fillers; the braille blank; noncharacters), and space at either end.
 */
export const INVISIBLE = /(?![\u200c\u200d])\p{Default_Ignorable_Code_Point}|\p{Noncharacter_Code_Point}|\u2800|^\s|\s$/u;

/** Text shown to people (in the console, the audit log, logs) that shows as what it is: see UNPRINTABLE and INVISIBLE. */
export function isPrintableText(value: unknown): boolean {
  return typeof value === 'string' && value.isWellFormed() && !UNPRINTABLE.test(value) && !INVISIBLE.test(value);
}

export function IsPrintableText(): PropertyDecorator {
  return ValidateBy({
    name: 'isPrintableText',
    validator: {
      validate: isPrintableText,
      defaultMessage: (args) =>
        `${args?.property ?? 'value'} must hold printable characters only: no control, format (bidi) or invisible characters, no space at either end`,
    },
  });
}
