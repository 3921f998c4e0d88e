import type { Type } from '@nestjs/common';
import { instanceToPlain, plainToInstance } from 'class-transformer';
import { declaredProperties, isPlainObject } from './bounded-transform';

// Between a request's JSON and a validation class's instance, both ways. class-transformer walks
// whatever it is given, and reads keys named like prototype members as such: free-form values
// (and unknown properties, refused by name before) are kept away from it and put back as they are.

/**
 * The instance class-transformer builds, with free-form values and skipped dictionary entries put
 * back as they arrived. Call after `checkShape` found nothing: unknown keys are not looked for here.
 */
export function toInstance<T extends object>(cls: Type<T>, raw: unknown): T {
  if (!isPlainObject(raw)) return plainToInstance(cls, raw as object, { enableImplicitConversion: false }) as T;
  const { copy, restore } = setAside(cls as Type<object>, raw);
  const instance = plainToInstance(cls, copy, { enableImplicitConversion: false }) as T;
  restore(instance);
  return instance;
}

type Restore = (instance: object) => void;

function setAside(cls: Type<object>, raw: Record<string, unknown>): { copy: Record<string, unknown>; restore: Restore } {
  const declared = declaredProperties(cls);
  const copy: Record<string, unknown> = {};
  const steps: Restore[] = [];
  for (const key of Object.keys(raw)) {
    const value = raw[key];
    const info = declared.get(key);
    // Unknown: already refused by name (checkShape), and left out of the instance. Given to
    // class-transformer, a key `constructor` inside it was read as the value's class: a 500.
    if (!info) continue;
    if (!info.nested && !info.converted && typeof value === 'object' && value !== null) {
      // Free-form: class-transformer never sees it; the instance gets the parsed JSON itself.
      steps.push((instance) => define(instance, key, value));
      continue;
    }
    if (info.nested && info.map && isPlainObject(value)) {
      const nested = info.nested;
      const parts = new Map<string, { copy: Record<string, unknown>; restore: Restore }>();
      const entriesCopy: Record<string, unknown> = {};
      for (const k of Object.keys(value)) {
        const v = value[k];
        const part = isPlainObject(v) ? setAside(nested, v) : undefined;
        if (part) parts.set(k, part);
        define(entriesCopy, k, part?.copy ?? v);
      }
      define(copy, key, entriesCopy);
      steps.push((instance) => {
        const built = (instance as Record<string, unknown>)[key];
        if (!(built instanceof Map)) return;
        // Rebuilt in the order of the request, with the entries class-transformer skipped.
        const entries = Object.keys(value).map((k) => {
          if (!built.has(k)) return [k, toInstance(nested, value[k])] as const;
          const entry: unknown = built.get(k);
          if (entry && typeof entry === 'object') parts.get(k)?.restore(entry);
          return [k, entry] as const;
        });
        define(instance, key, new Map(entries));
      });
      continue;
    } else if (info.nested && info.objectOnly && Array.isArray(value)) {
      // Refused by the property's own rule, which is all that is answered of it (flatten-errors.ts):
      // built, 120,000 elements of `"model":[{},…]` were 120,000 instances validated, 3.9 s (session 45).
      define(copy, key, []);
      continue;
    } else if (info.nested && Array.isArray(value)) {
      const nested = info.nested;
      const parts = value.map((v) => (isPlainObject(v) ? setAside(nested, v) : undefined));
      define(
        copy,
        key,
        value.map((v, i) => parts[i]?.copy ?? v),
      );
      steps.push((instance) => {
        const built = (instance as Record<string, unknown>)[key];
        if (Array.isArray(built)) built.forEach((b, i) => b && typeof b === 'object' && parts[i]?.restore(b));
      });
      continue;
    } else if (info.nested && isPlainObject(value)) {
      const part = setAside(info.nested, value);
      define(copy, key, part.copy);
      steps.push((instance) => {
        const built = (instance as Record<string, unknown>)[key];
        if (built && typeof built === 'object') part.restore(built);
      });
      continue;
    }
    define(copy, key, value);
  }
  return { copy, restore: (instance) => steps.forEach((s) => s(instance)) };
}

/**
 * The plain form of an instance toInstance built, as instanceToPlain makes it, with the free-form
 * values put back as they are: walked by class-transformer, a key `constructor` in one was read
 * as the value's class (a 500 on any tool's arguments), and a key `__proto__` set a prototype.
 */
export function toPlainObject(instance: object): Record<string, unknown> {
  const { copy, restore } = setAsideOfInstance(instance);
  const plain = instanceToPlain(copy) as Record<string, unknown>;
  restore(plain);
  return plain;
}

function setAsideOfInstance(instance: object): { copy: object; restore: Restore } {
  const declared = declaredProperties(Object.getPrototypeOf(instance)?.constructor as Type<object>);
  const copy = Object.create(Object.getPrototypeOf(instance) as object | null) as Record<string, unknown>;
  const steps: Restore[] = [];
  const nestedPart = (v: unknown) => (v !== null && typeof v === 'object' && !(v instanceof Map) && !Array.isArray(v) ? setAsideOfInstance(v) : undefined);
  for (const key of Object.keys(instance)) {
    const value = (instance as Record<string, unknown>)[key];
    const info = declared.get(key);
    if (info?.nested && value instanceof Map) {
      // A dictionary's keys may be named anything: its plain object is built here, key by key.
      const entries = [...(value as Map<string, unknown>)].map(([k, v]) => [k, v !== null && typeof v === 'object' ? toPlainObject(v) : v] as const);
      steps.push((plain) => {
        const out = {};
        for (const [k, v] of entries) define(out, k, v);
        define(plain, key, out);
      });
      continue;
    }
    if (info?.nested && Array.isArray(value)) {
      const parts = value.map(nestedPart);
      define(
        copy,
        key,
        value.map((v, i) => parts[i]?.copy ?? v),
      );
      steps.push((plain) => {
        const built = (plain as Record<string, unknown>)[key];
        if (Array.isArray(built)) built.forEach((b, i) => b && typeof b === 'object' && parts[i]?.restore(b));
      });
      continue;
    }
    const part = info?.nested ? nestedPart(value) : undefined;
    if (part) {
      define(copy, key, part.copy);
      steps.push((plain) => {
        const built = (plain as Record<string, unknown>)[key];
        if (built && typeof built === 'object') part.restore(built);
      });
      continue;
    }
    if (!info?.converted && value !== null && typeof value === 'object') {
      steps.push((plain) => define(plain, key, value));
      continue;
    }
    define(copy, key, value);
  }
  return { copy, restore: (plain) => (steps.forEach((s) => s(plain)), inOrderOf(instance, plain)) };
}

/** Puts `plain`'s keys back in the order of `instance`'s (restored values were added last). */
function inOrderOf(instance: object, plain: object): void {
  const rank = new Map(Object.keys(instance).map((k, i) => [k, i]));
  const record = plain as Record<string, unknown>;
  const entries = Object.keys(record).map((k) => [k, record[k]] as const);
  entries.sort(([a], [b]) => (rank.get(a) ?? rank.size) - (rank.get(b) ?? rank.size));
  for (const [k] of entries) delete record[k];
  for (const [k, v] of entries) define(record, k, v);
}

/** An own data property, whatever the key: `obj[key] = v` with key `__proto__` would change the prototype. */
function define(target: object, key: string, value: unknown): void {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
}
