import type { Type } from '@nestjs/common';
import { TransformationType } from 'class-transformer';
import type { MetadataStorage } from 'class-transformer/types/MetadataStorage';
import { getMetadataStorage } from 'class-validator';
import type { ValidationMetadata } from 'class-validator/types/metadata/ValidationMetadata';
import { FieldError, MAX_REPORTED_ERRORS } from './api-error';
import { joinPath } from './field-path';
import { installValidationMetadataIndex } from './validation-metadata-index';

/**
 * Turning untrusted JSON into an instance of a validation class, in time linear in its size and
 * without losing a key.
 *
 * class-transformer alone does neither: it takes time that grows faster than the number of keys
 * it copies (a 1 MiB body of unknown keys held the event loop for seconds, every tenant's health
 * check with it), and it silently skips a key that names a member of the target's prototype
 * (`constructor`, `toString`, `valueOf`, `hasOwnProperty`, `__proto__`, and on a Map `get`, `set`,
 * ...): skipped at the class level, such a key slipped past the unknown-property check; skipped
 * inside a free-form object, it was data lost without a word.
 *
 * So, before class-transformer sees anything:
 * - every key of every object that becomes a class instance is checked against the properties the
 *   class declares (what class-validator's whitelist would do afterwards), and an array against
 *   its `@ArrayMaxSize`: refusals are counted in one pass and listed up to MAX_REPORTED_ERRORS;
 * - free-form values (a declared property with neither `@Type` nor `@Transform`: document
 *   metadata, a capability's config, `toolApproval`) are set aside and put back as they arrived,
 *   after class-transformer has built the instance around them, so no key of them is lost and
 *   their size costs one copy;
 * - a dictionary turned into a Map (`toolOverrides`) gets back the entries class-transformer
 *   skipped;
 * - a dictionary of plain values with an `@EntriesIn` rule (`toolApproval`) has each entry checked,
 *   so each bad entry is one problem naming its key (a class-validator rule sees only the whole).
 */

// Where @Type and @Transform are recorded; class-transformer exports it only from its build.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { defaultMetadataStorage } = require('class-transformer/cjs/storage') as { defaultMetadataStorage: MetadataStorage };

// Every validation comes through here: class-validator's lookup of a class's rules, linear in
// the classes it knows, is replaced by one linear in the class's depth (validation-metadata-index.ts).
installValidationMetadataIndex();

/** Entries a dictionary turned into a Map may have before it is refused unread, unless its property says fewer. */
export const MAX_MAP_ENTRIES = 1000;

const mapLimits = new WeakMap<object, Map<string, number>>();

/**
 * The most entries this dictionary (a Map property) may have. The shape check refuses more with
 * this limit in the message: refused there under the general bound, a dictionary of 501 to 1000
 * entries was told it was not an object, and one of 1001 that the limit was 1000.
 */
export function MapMaxEntries(max: number): PropertyDecorator {
  return (target, propertyName) => {
    const limits = mapLimits.get(target.constructor) ?? new Map<string, number>();
    limits.set(propertyName as string, Math.min(max, MAX_MAP_ENTRIES));
    mapLimits.set(target.constructor, limits);
  };
}

function mapLimitOf(cls: Type<object>, property: string): number {
  for (let c: unknown = cls; typeof c === 'function' && c !== Function.prototype; c = Object.getPrototypeOf(c)) {
    const limit = mapLimits.get(c)?.get(property);
    if (limit !== undefined) return limit;
  }
  return MAX_MAP_ENTRIES;
}

export interface ShapeCheck {
  errors: FieldError[];
  /** Problems found beyond `errors`. */
  omitted: number;
  /**
   * Only a few unknown keys: building and validating the instance stays cheap, so it is done, and
   * the answer lists every problem at once (API.md), not only the unknown keys.
   */
  recoverable: boolean;
}

/** The shape's problems and the validator's, each once (the whitelist may report a key again). */
export function mergeErrors(shape: FieldError[], validation: FieldError[]): FieldError[] {
  const seen = new Set(shape.map((e) => `${e.code} ${e.path}`));
  return [...shape, ...validation.filter((e) => !seen.has(`${e.code} ${e.path}`))];
}

interface PropertyInfo {
  /** The class of a nested object (`@Type(() => X)` on a class with validation rules). */
  nested?: Type<object>;
  /** Declared a list (`@IsArray`): anything else is refused by that rule, and not walked as an element. */
  list: boolean;
  /** Declared an object (`@IsObject`, or a dictionary): a list there is refused by that rule whatever it holds. */
  objectOnly: boolean;
  /** A dictionary of nested objects (`@Type` on a property whose design type is Map). */
  map: boolean;
  /** The most entries such a dictionary may have. */
  maxEntries: number;
  /** `@Transform` or a `@Type` of a non-class (Number, Date): class-transformer's to convert. */
  converted: boolean;
  arrayMaxSize?: number;
  entries?: EntryRule;
}

interface EntryRule {
  allowed: readonly unknown[];
  /** Past this many keys the entries are not read: the property's own rule refuses the size. */
  maxKeys: number;
  message: (path: string) => string;
}

const entryRules = new WeakMap<object, Map<string, EntryRule>>();

/**
 * Every value of this dictionary must be one of `allowed`; each entry that is not is an `isIn`
 * problem at `<property>.<key>`. Checked by checkShape, the one way a body becomes an instance;
 * the property still needs a rule of its own for its type and size.
 */
export function EntriesIn(allowed: readonly unknown[], maxKeys: number, message: (path: string) => string): PropertyDecorator {
  return (target, propertyName) => {
    const rules = entryRules.get(target.constructor) ?? new Map<string, EntryRule>();
    rules.set(propertyName as string, { allowed, maxKeys, message });
    entryRules.set(target.constructor, rules);
  };
}

function entryRuleOf(cls: Type<object>, property: string): EntryRule | undefined {
  for (let c: unknown = cls; typeof c === 'function' && c !== Function.prototype; c = Object.getPrototypeOf(c)) {
    const rule = entryRules.get(c);
    if (rule?.has(property)) return rule.get(property);
  }
  return undefined;
}

const PRIMITIVES = new Set<unknown>([String, Number, Boolean, Date, Object, Array, Map, Set]);
const classInfo = new WeakMap<Type<object>, Map<string, PropertyInfo>>();

/** What a validation class declares, per property (cached: the metadata never changes after boot). */
export function declaredProperties(cls: Type<object>): Map<string, PropertyInfo> {
  const cached = classInfo.get(cls);
  if (cached) return cached;
  const metadatas: ValidationMetadata[] = getMetadataStorage().getTargetValidationMetadatas(cls, '', true, false);
  const info = new Map<string, PropertyInfo>();
  for (const m of metadatas) {
    if (!info.has(m.propertyName)) info.set(m.propertyName, describe(cls, m.propertyName));
    if (m.name === 'arrayMaxSize' && typeof m.constraints?.[0] === 'number') info.get(m.propertyName)!.arrayMaxSize = m.constraints[0];
    if (m.name === 'isArray') info.get(m.propertyName)!.list = true;
    if (m.name === 'isObject') info.get(m.propertyName)!.objectOnly = true;
  }
  for (const p of info.values()) p.objectOnly = (p.objectOnly || p.map) && !p.list;
  classInfo.set(cls, info);
  return info;
}

function describe(cls: Type<object>, property: string): PropertyInfo {
  const typeMeta = defaultMetadataStorage.findTypeMetadata(cls, property);
  const transforms = defaultMetadataStorage.findTransformMetadatas(cls, property, TransformationType.PLAIN_TO_CLASS);
  let nested: Type<object> | undefined;
  if (typeMeta?.typeFunction) {
    const t = typeMeta.typeFunction() as Type<object>;
    if (typeof t === 'function' && !PRIMITIVES.has(t)) nested = t;
  }
  return {
    nested,
    list: false,
    objectOnly: false,
    map: typeMeta?.reflectedType === Map,
    maxEntries: mapLimitOf(cls, property),
    converted: transforms.length > 0 || (typeMeta !== undefined && nested === undefined),
    entries: entryRuleOf(cls, property),
  };
}

export function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

class Collector {
  readonly errors: FieldError[] = [];
  omitted = 0;
  get full(): boolean {
    return this.errors.length >= MAX_REPORTED_ERRORS;
  }
  add(error: FieldError): void {
    if (this.errors.length < MAX_REPORTED_ERRORS) this.errors.push(error);
    else this.omitted++;
  }
}

/**
 * Unknown keys and over-long arrays, anywhere a class instance will be built, in one linear pass.
 * Free-form values are not entered: any key is allowed there.
 */
/** Problems after which the instance is still built and validated: each costs nothing to carry. */
const RECOVERABLE = new Set(['unknown_property', 'isIn']);

export function checkShape(cls: Type<object>, raw: unknown, at = ''): ShapeCheck {
  const out = new Collector();
  walk(cls, raw, at, out);
  const recoverable = out.omitted === 0 && out.errors.length < MAX_REPORTED_ERRORS && out.errors.every((e) => RECOVERABLE.has(e.code!));
  return { errors: out.errors, omitted: out.omitted, recoverable };
}

function walk(cls: Type<object>, raw: unknown, at: string, out: Collector): void {
  if (!isPlainObject(raw)) return;
  const declared = declaredProperties(cls);
  for (const key of Object.keys(raw)) {
    const info = declared.get(key);
    if (!info) {
      // Counted past the bound without building anything: the count is all that is answered.
      if (out.full) out.omitted++;
      else out.add({ path: joinPath(at, key), code: 'unknown_property', message: `property ${key} is not allowed` });
      continue;
    }
    const path = joinPath(at, key);
    const value = raw[key];
    if (Array.isArray(value) && info.arrayMaxSize !== undefined && value.length > info.arrayMaxSize) {
      out.add({ path, code: 'arrayMaxSize', message: `${key} must contain no more than ${info.arrayMaxSize} elements` });
      continue;
    }
    if (info.entries && isPlainObject(value)) checkEntries(info.entries, value, path, out);
    if (!info.nested) continue;
    if (info.map && isPlainObject(value)) {
      const keys = Object.keys(value);
      if (keys.length > info.maxEntries) {
        out.add({ path, code: 'maxEntries', message: `${key} has more than ${info.maxEntries} entries` });
        continue;
      }
      for (const k of keys) walkElement(info.nested, value[k], joinPath(path, k), out);
    } else if (Array.isArray(value) && !info.objectOnly) {
      value.forEach((v, i) => walkElement(info.nested!, v, joinPath(path, String(i)), out));
    } else if (!info.list) {
      // An object where a list belongs is one problem (isArray), not unknown "properties" 0, 1, ...
      walk(info.nested, value, path, out);
    }
  }
}

function checkEntries(rule: EntryRule, value: Record<string, unknown>, at: string, out: Collector): void {
  const keys = Object.keys(value);
  if (keys.length > rule.maxKeys) return;
  for (const k of keys) {
    if (rule.allowed.includes(value[k])) continue;
    const path = joinPath(at, k);
    out.add({ path, code: 'isIn', message: rule.message(path) });
  }
}

/**
 * An element of a list (or an entry of a dictionary) of objects. class-validator's ValidateNested
 * takes an array there as a list of its own and checks its elements, so `[[]]` passed as a list of
 * no problems, and was stored as `[{}]` (a capability without its id, a message without content).
 */
function walkElement(cls: Type<object>, raw: unknown, at: string, out: Collector): void {
  if (isPlainObject(raw)) walk(cls, raw, at, out);
  else out.add({ path: at, code: 'isObject', message: `${at} must be an object` });
}
