import { ValidateBy } from 'class-validator';

/**
 * The ISO 8601 instants a query parameter takes: a date, or a date and time with an optional
 * offset. Week dates (`2020-W01`), ordinal dates and other forms a validator may call ISO 8601
 * are refused: PostgreSQL does not read them all (one answered 500).
 */
const INSTANT = /^(\d{4}-\d{2}-\d{2})(?:[Tt ](\d{2}):(\d{2})(?::(\d{2})(\.\d{1,9})?)?(?:([Zz])|([+-])(\d{2})(?::?(\d{2}))?)?)?$/;

/**
 * The instant in one unambiguous form for PostgreSQL, or undefined. Without an offset the time is
 * UTC (API.md: times are UTC), never the database session's time zone.
 */
export function normalizeInstant(text: string): string | undefined {
  const m = INSTANT.exec(text);
  if (!m) return undefined;
  const [, date, hh = '00', mm = '00', ss = '00', fraction = '', , sign, offsetH, offsetM = '00'] = m;
  // JavaScript reads 2020-02-30 as March 1st and PostgreSQL refuses it: the day must read back as written.
  const day = new Date(`${date}T00:00:00Z`);
  if (Number.isNaN(day.getTime()) || day.toISOString().slice(0, 10) !== date) return undefined;
  // PostgreSQL has no year 0 (1 BC comes before 1 AD): 0000-01-01 answered 500 on every list.
  if (!yearInRange(date)) return undefined;
  if (Number(hh) > 23 || Number(mm) > 59 || Number(ss) > 59) return undefined;
  if (sign && (Number(offsetH) > 15 || Number(offsetM) > 59)) return undefined;
  return `${date}T${hh}:${mm}:${ss}${fraction}${sign ? `${sign}${offsetH}:${offsetM}` : 'Z'}`;
}

/** Years PostgreSQL and the API both read the same way: 0001 to 9999 (four digits, never 0000). */
export function yearInRange(isoDate: string): boolean {
  const year = Number(isoDate.slice(0, 4));
  return /^\d{4}-/.test(isoDate) && year >= 1 && year <= 9999;
}

/**
 * An instant `normalizeInstant` reads; the message names the field. Every instant a request gives
 * goes through it: class-validator's ISO 8601 check also takes week and ordinal dates, the basic
 * form and a comma before the fraction, which JavaScript's Date does not read (an Invalid Date
 * sent to the database was a 500, attack round 20, AA-F1).
 */
export function IsInstant(): PropertyDecorator {
  return ValidateBy({
    name: 'isInstant',
    validator: {
      validate: (v: unknown) => typeof v === 'string' && normalizeInstant(v) !== undefined,
      defaultMessage: (args) => `${args?.property} must be an ISO 8601 date, or date and time (e.g. 2026-01-31T09:00:00Z)`,
    },
  });
}
