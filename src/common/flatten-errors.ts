import type { ValidationError } from 'class-validator';
import { getMetadataStorage } from 'class-validator';
import type { ValidationMetadata } from 'class-validator/types/metadata/ValidationMetadata';
import { MAX_REPORTED_ERRORS, type FieldError } from './api-error';
import { joinPath } from './field-path';

/**
 * Constraints that say a value is of the wrong type, most basic first. When one fails, the
 * others of the property (a length, a size, the fields of a nested object) describe a value that
 * is not there: a missing `name` was also "longer than 200 characters", an object where a list
 * belongs also "more than 100 elements" with fields at paths that do not exist. Only the type is
 * reported then, once.
 */
const TYPE_CONSTRAINTS = ['isArray', 'isObject', 'isDictionary', 'isApprovalMap', 'isString', 'isBoolean', 'isInt', 'isNumber', 'isUuid', 'isEnum'];

/** Problems flattened: no more than a refusal can name of any list, and how many more were found. */
export interface FlatErrors {
  errors: FieldError[];
  /** Bad elements of lists past the first MAX_REPORTED_ERRORS of each: counted, not named. */
  omitted: number;
  /** The paths of the lists whose bad elements were counted past those (`roles`). */
  counted: string[];
}

/**
 * Flattens class-validator's tree into one entry per problem, each naming its field: a value of
 * the wrong type is one entry, and a rule on each element of a list (`{ each: true }`) is one entry
 * per bad element, at its index (`tags[1]`), not one per rule at the list's path.
 * Needs errors built with `validationError: { target: true, value: true }` for the elements; without
 * them each rule is reported at the list's path.
 *
 * A list's bad elements past the first MAX_REPORTED_ERRORS are counted, not built: no refusal
 * names more, and building 300,000 entries (paths and messages) held the node 0.2 to 0.3 s of the
 * 0.5 s such a body cost (session 45).
 */
export function flattenValidationErrors(errors: ValidationError[], parent = '', flat: FlatErrors = { errors: [], omitted: 0, counted: [] }): FlatErrors {
  const out = flat.errors;
  for (const error of errors) {
    const path = joinPath(parent, error.property);
    const constraints = error.constraints ?? {};
    const elements = elementProblems(error, path);
    const type = TYPE_CONSTRAINTS.find((c) => constraints[c] !== undefined && !elements?.rules.has(c));
    if (type) {
      out.push({ path, code: type, message: constraints[type] });
      continue;
    }
    for (const [constraint, message] of Object.entries(constraints)) {
      if (elements?.rules.has(constraint)) continue;
      const unknown = constraint === 'whitelistValidation';
      out.push({ path, code: unknown ? 'unknown_property' : constraint, message: unknown ? `property ${error.property} is not allowed` : message });
    }
    // Appended one by one: a list of 400,000 bad elements, pushed as the arguments of one call,
    // overflowed the stack (a 500, session 44).
    for (const found of elements?.errors ?? []) out.push(found);
    if (elements?.omitted) {
      flat.omitted += elements.omitted;
      flat.counted.push(path);
    }
    if (error.children?.length) flattenValidationErrors(error.children, path, flat);
  }
  return flat;
}

/**
 * The `each` rules of a list that failed, re-checked element by element: the first rule each bad
 * element breaks (a type rule before the others), at the element's index. Undefined when the value
 * is not a list, or no element can be named (then the rules are reported as they came).
 */
function elementProblems(error: ValidationError, path: string): { rules: Set<string>; errors: FieldError[]; omitted: number } | undefined {
  const value: unknown = error.value;
  const target = error.target as object | undefined;
  if (!Array.isArray(value) || !target || !error.constraints) return undefined;
  const storage = getMetadataStorage();
  const metadatas: ValidationMetadata[] = storage
    .getTargetValidationMetadatas(target.constructor, '', true, false)
    .filter((m) => m.propertyName === error.property && m.each && m.type === 'customValidation' && m.constraintCls);
  const rules = metadatas
    .map((m) => ({ m, constraint: storage.getTargetValidatorConstraints(m.constraintCls)[0] }))
    .filter(({ constraint }) => constraint?.name !== undefined && error.constraints![constraint.name] !== undefined)
    .sort((a, b) => rank(a.constraint.name) - rank(b.constraint.name));
  if (rules.length === 0) return undefined;
  const errors: FieldError[] = [];
  let omitted = 0;
  value.forEach((element: unknown, i) => {
    for (const { m, constraint } of rules) {
      const args = { value: element, constraints: m.constraints, targetName: target.constructor.name, object: target, property: error.property };
      if (constraint.instance.validate(element, args) === true) continue;
      if (errors.length === MAX_REPORTED_ERRORS) {
        omitted++;
        break;
      }
      const at = `${path}[${i}]`;
      const message = error.constraints![constraint.name];
      const prefix = `each value in ${error.property} `;
      errors.push({ path: at, code: constraint.name, message: message.startsWith(prefix) ? `${at} ${message.slice(prefix.length)}` : message });
      break;
    }
  });
  return errors.length > 0 ? { rules: new Set(rules.map((r) => r.constraint.name)), errors, omitted } : undefined;
}

function rank(constraint: string): number {
  const i = TYPE_CONSTRAINTS.indexOf(constraint);
  return i === -1 ? TYPE_CONSTRAINTS.length : i;
}
