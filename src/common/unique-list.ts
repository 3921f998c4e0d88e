import { buildMessage, ValidateBy, ValidationOptions } from 'class-validator';

/** Whether no two elements are the same (`===`, or what `identifier` reads of each): one pass, over a Set. */
export function isUniqueList(value: unknown, identifier?: (element: unknown) => unknown): boolean {
  if (!Array.isArray(value)) return false;
  const seen = new Set<unknown>();
  for (const element of value) {
    const key = identifier && element != null ? identifier(element) : element;
    if (seen.has(key)) return false;
    seen.add(key);
  }
  return true;
}

/**
 * class-validator's `ArrayUnique`, in one pass: it compares each element with every one before it
 * (`indexOf`), so a body of 100,000 distinct role names held the event loop 14.5 s, and of 100,000
 * empty lists 1.6 s (session 44). Same rule name and message: answers read as they did.
 */
export function ArrayUnique(identifier?: (element: unknown) => unknown, options?: ValidationOptions): PropertyDecorator {
  return ValidateBy(
    {
      name: 'arrayUnique',
      validator: {
        validate: (value) => isUniqueList(value, identifier),
        defaultMessage: buildMessage((eachPrefix) => `${eachPrefix}All $property's elements must be unique`, options),
      },
    },
    options,
  );
}
