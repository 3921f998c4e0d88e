import 'reflect-metadata';
import { Expose, Type as TransformType } from 'class-transformer';
import {
  ArrayMaxSize,
  Equals,
  getMetadataStorage,
  IsArray,
  IsBoolean,
  IsEmpty,
  IsIn,
  IsInt,
  IsOptional,
  IsString,
  Max,
  MaxLength,
  Min,
  Validate,
  ValidateNested,
  ValidatorConstraint,
  ValidatorConstraintInterface,
} from 'class-validator';
import { JSONSchema, targetConstructorToSchema } from 'class-validator-jsonschema';
import type { Type } from '@nestjs/common';
import '../app.module';
import { syntheticCapabilityModules } from '../../bench/growth/synthetic-capabilities';
import { EnumLabels, Multiline } from './form-hints.decorator';
import { classSchema } from './class-schema';
import { fastRawClassSchema, rawClassSchema } from './raw-class-schema';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const { defaultMetadataStorage } = require('class-transformer/cjs/storage') as typeof import('class-transformer/types/storage');

class Leaf {
  @IsInt() @Min(0) units: number;
}
@JSONSchema({ description: 'A class with every kind of rule capabilities use.' })
class Varied {
  @IsString() @MaxLength(40) @JSONSchema({ title: 'Name' }) name: string;
  @IsOptional() @IsIn(['a', 'b']) @EnumLabels({ a: 'A', b: 'B' }) mode: string = 'a';
  @IsOptional() @IsString() @Multiline() @JSONSchema({ description: 'Markdown' }) notes = '';
  @IsArray() @ArrayMaxSize(3) @IsString({ each: true }) @MaxLength(9, { each: true }) tags: string[];
  @ValidateNested({ each: true }) @TransformType(() => Leaf) leaves: Leaf[];
  @IsOptional() @IsBoolean() flag?: boolean;
  @IsEmpty() nothing?: unknown;
  @IsOptional() @IsInt() @Min(1) @Max(5) @JSONSchema((schema) => ({ ...schema, 'x-computed': true })) level = 2;
}
@ValidatorConstraint({ name: 'isEven' })
class IsEven implements ValidatorConstraintInterface {
  validate(value: unknown): boolean {
    return typeof value === 'number' && value % 2 === 0;
  }
}
/** Not registered as a constraint (no @ValidatorConstraint): its rule keeps the generic type. */
class Undecorated implements ValidatorConstraintInterface {
  validate(): boolean {
    return true;
  }
}
/** The corners: a custom constraint, a rule with no schema, two enums merged, undefined and null-prototype extras, a null under a nested `$ref`. */
class Corners {
  @Validate(IsEven) even: number;
  @Equals({ not: 'a primitive' }) odd: unknown;
  @IsIn(['a', 'b']) @IsIn(['c']) letters: string;
  @IsString() @JSONSchema({ description: undefined, type: undefined, title: 'T' }) undefinedExtra: string;
  @Validate(Undecorated) unregistered: string;
  @IsString()
  @JSONSchema(Object.assign(Object.create(null) as object, { examples: [{ nested: Object.assign(Object.create(null) as object, { x: 1 }) }] }))
  nullProto: string;
  @ValidateNested({ each: true }) @TransformType(() => Leaf) @JSONSchema({ examples: [null] }) leaves: Leaf[];
}
class Renamed {
  @Expose({ name: 'outer_name' }) @IsString() innerName: string;
}
class Base {
  @IsString() inherited: string;
}
class Derived extends Base {
  @IsInt() own: number;
}

/** Every class the product validates (app.module brings every builtin and DTO), the synthetic capabilities, and the ones above. */
function everyValidatedClass(): Type<object>[] {
  syntheticCapabilityModules(3);
  const targets = (getMetadataStorage() as unknown as { validationMetadatas: Map<Function, unknown> }).validationMetadatas;
  return [...targets.keys()].filter((t): t is Type<object> => typeof t === 'function' && t.name !== '');
}

describe('rawClassSchema', () => {
  const library = (cls: Type<object>) => JSON.stringify(targetConstructorToSchema(cls, { classTransformerMetadataStorage: defaultMetadataStorage }));

  it('answers byte for byte what class-validator-jsonschema answers, for every validated class', () => {
    const classes = everyValidatedClass();
    for (const cls of classes) {
      expect([cls.name, JSON.stringify(rawClassSchema(cls))]).toEqual([cls.name, library(cls)]);
      // Every capability's classes take the fast path: only inherited rules (the list queries' paging) or class-transformer's renaming leave it.
      const inherits = getMetadataStorage()
        .getTargetValidationMetadatas(cls, '', true, false)
        .some((m) => m.target !== cls);
      const renames = defaultMetadataStorage.getExposedMetadatas(cls).length + defaultMetadataStorage.getExcludedMetadatas(cls).length > 0;
      expect([cls.name, fastRawClassSchema(cls) === undefined]).toEqual([cls.name, inherits || renames]);
    }
    expect(classes).toEqual(expect.arrayContaining([Varied, Leaf, Derived, Corners, Renamed]));
    expect(classes.length).toBeGreaterThan(50);
  });

  it('leaves inherited rules and renamed or excluded properties to the library', () => {
    expect(fastRawClassSchema(Derived)).toBeUndefined();
    expect(fastRawClassSchema(Renamed)).toBeUndefined();
    expect(fastRawClassSchema(Corners)).toBeDefined();
    expect(rawClassSchema(Derived)).toEqual(JSON.parse(library(Derived)));
    expect(fastRawClassSchema(Varied)).toBeDefined();
  });

  it('keeps what the corners say through the full schema: nested class inlined, its null example kept', () => {
    const { schema, problems } = classSchema(Corners, { requireDefaults: false });
    expect(problems).toEqual([]);
    const properties = schema.properties as Record<string, Record<string, unknown>>;
    expect(properties.leaves).toMatchObject({
      type: 'array',
      items: { type: 'object', properties: { units: { type: 'integer', minimum: 0 } } },
      examples: [null],
    });
    expect(properties.undefinedExtra).toEqual({ type: 'string', title: 'T' });
    // Decorators apply bottom-up: the upper @IsIn merges over the lower, index by index, as lodash.merge does.
    expect(properties.letters.enum).toEqual(['a', 'b']);
  });

  it('never lets two schemas share an object: a change to one is not seen in the next', () => {
    const first = rawClassSchema(Varied) as { properties: Record<string, Record<string, unknown>> };
    (first.properties.mode.enum as string[]).push('c');
    first.properties.name.type = 'number';
    (first.properties.mode['x-enum-labels'] as Record<string, string>).c = 'C';
    expect(JSON.stringify(rawClassSchema(Varied))).toBe(library(Varied));
  });
});
