import { JSONSchema } from 'class-validator-jsonschema';

/** The JSON Schema extensions that Builder forms read (API.md, "Capability catalog"). */
export const X_ENUM_LABELS = 'x-enum-labels';
export const X_MULTILINE = 'x-multiline';

/**
 * Labels for the values of an `@IsIn(...)` field, shown by forms beside the enum. The registry
 * refuses the boot when the labels do not cover exactly the field's allowed values.
 */
export function EnumLabels(labels: Record<string, string>): PropertyDecorator {
  return JSONSchema({ [X_ENUM_LABELS]: labels }) as PropertyDecorator;
}

/** A string edited as Markdown in a multi-line editor rather than a one-line input. */
export function Multiline(): PropertyDecorator {
  return JSONSchema({ [X_MULTILINE]: true }) as PropertyDecorator;
}
