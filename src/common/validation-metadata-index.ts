import { getMetadataStorage } from 'class-validator';
import type { ValidationMetadata } from 'class-validator/types/metadata/ValidationMetadata';

/**
 * class-validator finds a class's inherited rules by testing `cls.prototype instanceof K` for
 * every class K it holds rules for, on every lookup, and every validation and every generated
 * JSON Schema looks a class up. So one validation costs O(classes in the process) and loading N
 * capabilities (three validated classes each) costs O(N²): 1.3 s and 0.29 ms per validation at
 * 1,000 capabilities (docs/benchmarks.md).
 *
 * This replaces the lookup on the process's one storage with the same rules found another way:
 * walk the class's own prototype chain (its depth, not the number of classes) against an index
 * of the storage by prototype, and keep each answer until a decorator adds a rule (decorators run
 * when a class is defined; after boot nothing adds any, tests define classes as they go). The
 * result is the same metadata in the same order as class-validator's own
 * (validation-metadata-index.spec.ts compares them).
 */

/** The parts of class-validator's MetadataStorage used here (its map is private in the typings). */
interface Storage {
  validationMetadatas: Map<Function | string, ValidationMetadata[]>;
  addValidationMetadata(metadata: ValidationMetadata): void;
  addConstraintMetadata(metadata: unknown): void;
  getTargetValidationMetadatas(target: Function, targetSchema: string, always: boolean, strictGroups: boolean, groups?: string[]): ValidationMetadata[];
}

const INSTALLED = Symbol.for('capability-platform.validation-metadata-index');

interface Index {
  /** Each class with rules, by its prototype, with its position in the storage (class-validator's order). */
  byPrototype: Map<object, { target: Function; order: number }>;
  answers: Map<Function, Map<string, ValidationMetadata[]>>;
}

export function installValidationMetadataIndex(storage: Storage = getMetadataStorage() as unknown as Storage): void {
  const marked = storage as unknown as Record<symbol, unknown>;
  if (marked[INSTALLED]) return;
  marked[INSTALLED] = true;
  let index: Index | undefined;
  const addValidation = storage.addValidationMetadata.bind(storage);
  const addConstraint = storage.addConstraintMetadata.bind(storage);
  storage.addValidationMetadata = (metadata) => {
    index = undefined;
    addValidation(metadata);
  };
  storage.addConstraintMetadata = (metadata) => {
    index = undefined;
    addConstraint(metadata);
  };
  const build = (): Index => {
    const byPrototype = new Map<object, { target: Function; order: number }>();
    let order = 0;
    for (const key of storage.validationMetadatas.keys()) {
      if (typeof key === 'function' && key.prototype) byPrototype.set(key.prototype as object, { target: key, order });
      order++;
    }
    return { byPrototype, answers: new Map() };
  };

  storage.getTargetValidationMetadatas = (target, targetSchema, always, strictGroups, groups) => {
    index ??= build();
    const key = `${targetSchema}\u0000${always}\u0000${strictGroups}\u0000${groups?.join('\u0001') ?? '\u0002'}`;
    let perTarget = index.answers.get(target);
    const known = perTarget?.get(key);
    if (known) return known.slice();
    const answer = lookup(storage, index, target, targetSchema, always, strictGroups, groups);
    if (!perTarget) index.answers.set(target, (perTarget = new Map()));
    perTarget.set(key, answer);
    return answer.slice();
  };
}

/** class-validator 0.15's getTargetValidationMetadatas, with the inherited classes found through the index. */
function lookup(
  storage: Storage,
  index: Index,
  target: Function,
  targetSchema: string,
  always: boolean,
  strictGroups: boolean,
  groups?: string[],
): ValidationMetadata[] {
  const included = (m: ValidationMetadata): boolean => {
    if (typeof m.always !== 'undefined') {
      if (m.always) return true;
    } else if (!(m.groups && m.groups.length) && always) return true;
    if (strictGroups && (!groups || !groups.length) && m.groups && m.groups.length) return false;
    if (groups && groups.length > 0) return !!m.groups && m.groups.some((g) => groups.includes(g));
    return true;
  };
  const own = (storage.validationMetadatas.get(target) ?? []).filter((m) => (m.target === target || m.target === targetSchema) && included(m));
  // Every ancestor's prototype, nearest first, looked up in the index; class-validator lists them
  // in the storage's order, so they are sorted back into it.
  const ancestors: { target: Function; order: number }[] = [];
  if (target.prototype) {
    for (let p = Object.getPrototypeOf(target.prototype) as object | null; p; p = Object.getPrototypeOf(p) as object | null) {
      const found = index.byPrototype.get(p);
      if (found) ancestors.push(found);
    }
  }
  ancestors.sort((a, b) => a.order - b.order);
  const inherited = ancestors
    .flatMap((a) => storage.validationMetadatas.get(a.target) ?? [])
    .filter((m) => typeof m.target !== 'string' && m.target !== target && included(m));
  const unique = inherited.filter((i) => !own.some((o) => o.propertyName === i.propertyName && o.type === i.type));
  return own.concat(unique);
}
