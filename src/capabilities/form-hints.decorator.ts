import { JSONSchema } from 'class-validator-jsonschema';
import { getMetadataSchema } from 'class-validator-jsonschema/build/decorators';

/** The JSON Schema extensions that Builder forms read (API.md, "Capability catalog"). */
export const X_ENUM_LABELS = 'x-enum-labels';
export const X_MULTILINE = 'x-multiline';

/**
 * Labels for the values of an `@IsIn(...)` field, shown by forms beside the enum. The registry
 * refuses the boot when the labels do not cover exactly the field's allowed values.
 *
 * Adds to a `@JSONSchema({ title, description })` on the same field when written above it
 * (decorators apply bottom-up; `@JSONSchema` itself replaces whatever was set before it).
 */
export function EnumLabels(labels: Record<string, string>): PropertyDecorator {
  return extendSchema({ [X_ENUM_LABELS]: labels });
}

/** A string edited as Markdown in a multi-line editor rather than a one-line input. Write it above `@JSONSchema`, as `@EnumLabels`. */
export function Multiline(): PropertyDecorator {
  return extendSchema({ [X_MULTILINE]: true });
}

function extendSchema(extension: Record<string, unknown>): PropertyDecorator {
  return (target, key) => {
    const current = getMetadataSchema(target, key as string);
    JSONSchema(typeof current === 'function' ? (source, options) => ({ ...current(source, options), ...extension }) : { ...current, ...extension })(
      target,
      key as string,
    );
  };
}
