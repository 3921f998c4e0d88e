import type { Type } from '@nestjs/common';
import { getMetadataStorage, IS_EMPTY, ValidationTypes } from 'class-validator';
import type { ValidationMetadata } from 'class-validator/types/metadata/ValidationMetadata';
import { targetConstructorToSchema } from 'class-validator-jsonschema';
import { getMetadataSchema } from 'class-validator-jsonschema/build/decorators';
import { defaultConverters } from 'class-validator-jsonschema/build/defaultConverters';
import type { IOptions } from 'class-validator-jsonschema/build/options';

// class-transformer keeps @Type() metadata in a storage it exports without typings for the CommonJS path.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { defaultMetadataStorage } = require('class-transformer/cjs/storage') as typeof import('class-transformer/types/storage');

type Schema = Record<string, unknown>;
type Converter = Schema | ((meta: ValidationMetadata, options: IOptions) => Schema | undefined);

const OPTIONS = { classTransformerMetadataStorage: defaultMetadataStorage } as Partial<IOptions>;
const CONVERTER_OPTIONS = {
  ...OPTIONS,
  additionalConverters: {},
  refPointerPrefix: '#/definitions/',
  schemaNameField: 'name',
  classValidatorMetadataStorage: getMetadataStorage(),
} as IOptions;
const converters = defaultConverters as unknown as Record<string, Converter>;

/**
 * What `targetConstructorToSchema(cls, { classTransformerMetadataStorage })` of
 * class-validator-jsonschema answers, made without its generic machinery for the classes
 * capabilities are written with: every rule declared on the class itself, no @Exclude or renaming
 * @Expose. Any other class goes to the library.
 *
 * Why: generating the schemas of 1,000 capabilities (3,000 classes) was most of the registry's
 * load, and most of that was the library copying its table of ~100 converters for every property
 * and lodash's generic merge and grouping (docs/benchmarks.md, issue 21). The converters
 * themselves are the library's, so the schemas are the same: raw-class-schema.spec.ts compares
 * both for every validated class of the product.
 */
export function rawClassSchema(cls: Type<object>): Schema {
  return fastRawClassSchema(cls) ?? (targetConstructorToSchema(cls, OPTIONS) as Schema);
}

/** `undefined` where the class needs what only the library handles. */
export function fastRawClassSchema(cls: Type<object>): Schema | undefined {
  const storage = getMetadataStorage();
  const metas = storage.getTargetValidationMetadatas(cls, '', true, false);
  if (metas.length === 0 || metas.some((m) => m.target !== cls)) return undefined;
  if (defaultMetadataStorage.getExposedMetadatas(cls).length > 0 || defaultMetadataStorage.getExcludedMetadatas(cls).length > 0) return undefined;

  // Grouped as lodash.groupby groups (a plain object, so the library's key order too).
  const byProperty: Record<string, ValidationMetadata[]> = {};
  for (const meta of metas) {
    let typed = meta;
    if (meta.constraintCls) {
      const constraint = storage.getTargetValidatorConstraints(meta.constraintCls);
      if (constraint.length > 0) typed = { ...meta, type: constraint[0].name } as ValidationMetadata;
    }
    (byProperty[meta.propertyName] ??= []).push(typed);
  }

  const properties: Schema = {};
  const required: string[] = [];
  for (const [name, propertyMetas] of Object.entries(byProperty)) {
    const merged: Schema = {};
    for (const meta of propertyMetas) {
      const converted = convert(meta);
      if (converted) mergeInto(merged, converted);
    }
    properties[name] = withDecorators(merged, cls, name);
    if (!propertyMetas.some((m) => m.type === ValidationTypes.CONDITIONAL_VALIDATION || m.type === IS_EMPTY)) required.push(name);
  }
  const definition: Schema = { properties, type: 'object' };
  if (required.length > 0) definition.required = required;
  return withDecorators(definition, cls, cls.name);
}

function convert(meta: ValidationMetadata): Schema | undefined {
  const typeMeta = defaultMetadataStorage.findTypeMetadata(meta.target as Function, meta.propertyName);
  const isMap = Boolean(typeMeta?.reflectedType) && new (typeMeta!.reflectedType as new () => unknown)() instanceof Map;
  const converter = converters[meta.type] ?? converters[ValidationTypes.CUSTOM_VALIDATION];
  const items = typeof converter === 'function' ? converter(meta, CONVERTER_OPTIONS) : converter;
  if (meta.each && isMap) return { additionalProperties: { ...items }, type: 'object' };
  return meta.each ? { items, type: 'array' } : items;
}

/** As the library's `applyDecorators`: a @JSONSchema function replaces, an object is merged over. */
function withDecorators(schema: Schema, cls: Type<object>, key: string): Schema {
  const extra = getMetadataSchema(cls.prototype as object, key) as Schema | ((s: Schema, o: IOptions) => Schema);
  if (typeof extra === 'function') return extra(schema, CONVERTER_OPTIONS);
  const out: Schema = {};
  mergeInto(out, schema);
  mergeInto(out, extra);
  return out;
}

/**
 * lodash.merge's deep merge for the JSON-like values converters return: plain objects merged key by
 * key, arrays index by index, both copied (converters hand out shared constants and the caller's own
 * arrays, which the schema must not alias), anything else assigned as is.
 */
function mergeInto(target: Schema | unknown[], source: Schema | unknown[]): void {
  for (const key of Object.keys(source)) {
    const value = (source as Schema)[key];
    const current = (target as Schema)[key];
    if (Array.isArray(value)) {
      const into = Array.isArray(current) ? current : [];
      mergeInto(into, value);
      (target as Schema)[key] = into;
    } else if (isPlain(value)) {
      const into = isPlain(current) ? current : {};
      mergeInto(into, value);
      (target as Schema)[key] = into;
    } else if (value !== undefined || !(key in target)) {
      (target as Schema)[key] = value;
    }
  }
}

function isPlain(value: unknown): value is Schema {
  if (value === null || typeof value !== 'object') return false;
  const proto = Object.getPrototypeOf(value) as unknown;
  return proto === Object.prototype || proto === null;
}
