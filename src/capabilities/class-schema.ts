import type { Type } from '@nestjs/common';
import { installValidationMetadataIndex } from '../common/validation-metadata-index';
import { X_ENUM_LABELS } from './form-hints.decorator';
import { rawClassSchema } from './raw-class-schema';

// class-transformer keeps @Type() metadata in a storage it exports without typings for the CommonJS path.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { defaultMetadataStorage } = require('class-transformer/cjs/storage') as typeof import('class-transformer/types/storage');

// Generating a schema looks the class's rules up: without the index that is O(classes) each (validation-metadata-index.ts).
installValidationMetadataIndex();

/** A JSON Schema document or subschema, as served in the catalog and offered to models. */
export type JSONSchema = Record<string, unknown>;

export const JSON_SCHEMA_DIALECT = 'https://json-schema.org/draft/2020-12/schema';

export interface ClassSchemaOptions {
  /** Config classes: every optional field must have a default (API.md). Tool inputs need not. */
  requireDefaults: boolean;
}

export interface ClassSchemaResult {
  schema: JSONSchema;
  /** Each names the field at fault; the registry prefixes the capability and refuses the boot. */
  problems: string[];
}

/**
 * Generates the JSON Schema (draft 2020-12) of a class-validator class. The class is the one
 * source of truth: class-validator-jsonschema gives the constraints, a fresh instance gives the
 * defaults (the library ignores initializers), and nested classes are inlined so that every
 * schema stands alone (forms and models get no `$ref` to chase).
 */
export function classSchema(cls: Type<object>, options: ClassSchemaOptions): ClassSchemaResult {
  const problems: string[] = [];
  const schema = objectSchema(cls, options, problems, '', []);
  return { schema: { $schema: JSON_SCHEMA_DIALECT, ...schema }, problems };
}

function objectSchema(cls: Type<object>, options: ClassSchemaOptions, problems: string[], at: string, stack: Function[]): JSONSchema {
  if (stack.includes(cls)) {
    problems.push(`${where(at)}: class ${cls.name} contains itself; recursive schemas are not supported`);
    return { type: 'object' };
  }
  let instance: Record<string, unknown>;
  try {
    instance = new cls() as Record<string, unknown>;
  } catch (err) {
    problems.push(`${where(at)}: class ${cls.name} cannot be constructed without arguments (${(err as Error).message})`);
    return { type: 'object' };
  }
  const raw = rawClassSchema(cls);
  const rawProperties = (raw.properties ?? {}) as Record<string, JSONSchema>;
  const rawRequired = (raw.required ?? []) as string[];
  const properties: Record<string, JSONSchema> = {};
  const required: string[] = [];

  for (const [name, property] of Object.entries(rawProperties)) {
    const path = join(at, name);
    const inlined = inlineNested(cls, name, property, options, problems, path, [...stack, cls]);
    const fallback = instance[name];
    // A field that has a default is optional in practice: absent input keeps the default.
    if (fallback !== undefined) {
      inlined.default = toJson(fallback);
    } else if (rawRequired.includes(name)) {
      required.push(name);
    } else if (options.requireDefaults) {
      problems.push(`${where(path)}: optional field has no default (give it an initializer)`);
    }
    checkEnumLabels(inlined, problems, path);
    properties[name] = inlined;
  }
  for (const name of Object.keys(instance)) {
    if (!(name in rawProperties)) {
      problems.push(`${where(join(at, name))}: field has no validation decorator, so every value of it would be refused as unknown`);
    }
  }

  const { properties: _p, required: _r, type: _t, ...rest } = raw;
  return { ...rest, type: 'object', properties, ...(required.length ? { required } : {}), additionalProperties: false };
}

/** Replaces the `$ref`s class-validator-jsonschema emits for @ValidateNested by the nested class's own schema. */
function inlineNested(
  owner: Type<object>,
  name: string,
  property: JSONSchema,
  options: ClassSchemaOptions,
  problems: string[],
  path: string,
  stack: Function[],
): JSONSchema {
  // The schema is the caller's own (rawClassSchema shares nothing), so only a `$ref` needs a copy.
  if (!containsRef(property)) return property;
  const walk = (node: unknown): unknown => {
    if (Array.isArray(node)) return node.map(walk);
    if (node === null || typeof node !== 'object') return node;
    const record = node as JSONSchema;
    if (typeof record.$ref === 'string') {
      const child = nestedClassOf(owner, name);
      if (child === Array || child === Object || child === undefined) {
        problems.push(`${where(path)}: nested field needs @Type(() => TheClass) so its schema can be generated`);
        return { type: 'object' };
      }
      return objectSchema(child as Type<object>, options, problems, path, stack);
    }
    return Object.fromEntries(Object.entries(record).map(([k, v]) => [k, walk(v)]));
  };
  return walk(property) as JSONSchema;
}

function containsRef(node: unknown): boolean {
  if (node === null || typeof node !== 'object') return false;
  if (Array.isArray(node)) return node.some(containsRef);
  return typeof (node as JSONSchema).$ref === 'string' || Object.values(node).some(containsRef);
}

function nestedClassOf(owner: Type<object>, name: string): Function | undefined {
  const typeMetadata = defaultMetadataStorage.findTypeMetadata(owner, name);
  return typeMetadata ? typeMetadata.typeFunction() : (Reflect.getMetadata('design:type', owner.prototype, name) as Function | undefined);
}

/** Labels must cover exactly the values a form can pick, or the form shows a value without words. */
function checkEnumLabels(property: JSONSchema, problems: string[], path: string): void {
  const labels = property[X_ENUM_LABELS] as Record<string, string> | undefined;
  if (labels === undefined) return;
  const enumValues = (property.enum ?? (property.items as JSONSchema | undefined)?.enum) as unknown[] | undefined;
  const allowed = (enumValues ?? []).map(String).sort();
  const labelled = Object.keys(labels).sort();
  if (!enumValues || allowed.join('\u0000') !== labelled.join('\u0000')) {
    problems.push(`${where(path)}: @EnumLabels keys [${labelled.join(', ')}] must equal the @IsIn values [${allowed.join(', ')}]`);
  }
}

function toJson(value: unknown): unknown {
  if (value === null || typeof value === 'string' || typeof value === 'boolean' || (typeof value === 'number' && Number.isFinite(value))) return value;
  return JSON.parse(JSON.stringify(value));
}

function join(at: string, name: string): string {
  return at ? `${at}.${name}` : name;
}

function where(path: string): string {
  return path ? `field "${path}"` : 'class';
}
