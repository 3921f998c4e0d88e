import { createHash } from 'node:crypto';
import { Role, ROLES } from '../principal';
import { INVISIBLE, UNPRINTABLE } from '../../common/printable-text';
import { joinersInContext } from './subject-joiners';
import { isSingleScript } from './subject-scripts';

/** What a verified access token says about its bearer, in the product's terms. */
export interface MappedClaims {
  subject: string;
  /** The organization's id or slug, as the token names it (not yet looked up). */
  orgRef: string;
  /** Only the roles the product knows, each once, in the product's order. */
  roles: Role[];
  /** The token's scopes; undefined when it carries no scope claim (then roles alone decide). */
  scopes?: string[];
}

export interface ClaimNames {
  orgClaim: string;
  rolesClaim: string;
}

/** A verified token that cannot be mapped to a principal; the message is safe to show its bearer. */
export class ClaimError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ClaimError';
  }
}

const MAX_SUBJECT = 255;
const MAX_LIST = 100;
const MAX_ITEM = 200;
// The subject is shown as the audit actor and written to logs: printable only (UNPRINTABLE,
// INVISIBLE), and zero-width joiners judged by where they stand (`joinersInContext`). `alice `,
// `alice\u3164` and `alice` were three actors all shown as alice.
/** A space that shows as U+0020 does (`alice\u00a0smith`, `a\u3000b`), and a mark on nothing. */
const LOOKALIKE_SPACE = /(?! )\p{Zs}/u;
const LEADING_MARK = /^\p{M}/u;

/**
 * Why a subject would display as another's, or undefined. Two forms of one text (`josé` composed or
 * as e + U+0301) are one subject shown twice: only NFC, the form providers send, is taken.
 */
function lookalikeOf(sub: string): string | undefined {
  if (sub.normalize('NFC') !== sub) return 'must be in Unicode normalization form C (NFC)';
  if (LOOKALIKE_SPACE.test(sub)) return 'must hold no space other than U+0020';
  if (LEADING_MARK.test(sub)) return 'must not start with a combining mark';
  if (!isSingleScript(sub)) return 'must not mix scripts (UTS #39, highly restrictive)';
  if (!joinersInContext(sub)) {
    return 'must hold a zero-width joiner or non-joiner only after a virama, between Arabic letters it keeps apart, or inside an emoji ZWJ sequence';
  }
  return undefined;
}

/**
 * Maps a verified token's claims. Claims are read as own properties only, so a claim named
 * `constructor` or `__proto__` in the configuration cannot reach into the prototype.
 */
export function mapClaims(payload: Record<string, unknown>, names: ClaimNames): MappedClaims {
  const sub = own(payload, 'sub');
  // A lone surrogate is not text: stored (audit actor, derived id) it becomes U+FFFD, and two subjects would be one.
  if (typeof sub !== 'string' || sub.length === 0 || sub.length > MAX_SUBJECT || UNPRINTABLE.test(sub) || INVISIBLE.test(sub) || !sub.isWellFormed()) {
    throw new ClaimError(`The token's sub claim must be a string of 1 to ${MAX_SUBJECT} printable characters.`);
  }
  const lookalike = lookalikeOf(sub);
  if (lookalike) throw new ClaimError(`The token's sub claim ${lookalike}, so that no subject displays as another.`);
  const org = own(payload, names.orgClaim);
  if (typeof org !== 'string' || org.length === 0 || org.length > MAX_ITEM) {
    throw new ClaimError(`The token carries no organization: its ${names.orgClaim} claim must name an organization's id or slug.`);
  }
  const known = new Set(stringList(own(payload, names.rolesClaim)) ?? []);
  const roles = ROLES.filter((r) => known.has(r));
  return { subject: sub, orgRef: org, roles, scopes: scopesOf(payload) };
}

/**
 * RFC 9068 / RFC 8693 `scope` (a space-separated string); Microsoft Entra and Okta put an array
 * (or a string) in `scp`. Absent from both: undefined, and the token is not narrowed by scope.
 */
export function scopesOf(payload: Record<string, unknown>): string[] | undefined {
  const scope = own(payload, 'scope');
  const value = scope !== undefined ? scope : own(payload, 'scp');
  if (value === undefined) return undefined;
  return [...new Set(stringList(value) ?? [])];
}

/** An array of strings, or a string of items separated by spaces or commas; anything else is no list. */
function stringList(value: unknown): string[] | undefined {
  const items = typeof value === 'string' ? value.split(/[\s,]+/) : Array.isArray(value) ? value : undefined;
  if (!items) return undefined;
  return items
    .slice(0, MAX_LIST)
    .filter((v): v is string => typeof v === 'string' && v.length > 0 && v.length <= MAX_ITEM)
    .map((v) => v.trim())
    .filter(Boolean);
}

function own(payload: Record<string, unknown>, name: string): unknown {
  return Object.prototype.hasOwnProperty.call(payload, name) ? payload[name] : undefined;
}

/**
 * A UUID (version 5, RFC 9562) named by the issuer and the subject: one person keeps one id across
 * tokens, and two issuers' equal subjects stay apart. Records that hold who asked or decided store it.
 */
export function principalIdOf(issuer: string, subject: string): string {
  // The URL namespace of RFC 9562, appendix C: the name is the issuer URL with the subject.
  const namespace = Buffer.from('6ba7b8119dad11d180b400c04fd430c8', 'hex');
  const hash = createHash('sha1').update(namespace).update(`${issuer}#${subject}`, 'utf8').digest();
  hash[6] = (hash[6] & 0x0f) | 0x50;
  hash[8] = (hash[8] & 0x3f) | 0x80;
  const hex = hash.subarray(0, 16).toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
