import { Type } from 'class-transformer';
import { ArrayMaxSize, IsArray, IsBoolean, IsIn, IsInt, IsOptional, IsString, Max, MaxLength, Min, ValidateNested } from 'class-validator';
import { JSONSchema } from 'class-validator-jsonschema';
import { strictAjv } from '../../test/support/json-schema';
import { classSchema, JSON_SCHEMA_DIALECT } from './class-schema';
import { EnumLabels, Multiline } from './form-hints.decorator';

class Point {
  @IsInt() x: number;
  @IsOptional() @IsInt() y: number = 0;
}

class Shape {
  @IsString()
  @MaxLength(50)
  @JSONSchema({ description: 'What to call it.' })
  name: string;

  @IsOptional()
  @IsIn(['circle', 'square'])
  @EnumLabels({ circle: 'Round', square: 'Four corners' })
  kind: string = 'circle';

  @IsOptional()
  @IsString()
  @Multiline()
  notes: string = '';

  @IsOptional()
  @ValidateNested()
  @Type(() => Point)
  origin: Point = Object.assign(new Point(), { x: 1 });

  @IsOptional()
  @IsArray()
  @ArrayMaxSize(3)
  @ValidateNested({ each: true })
  @Type(() => Point)
  corners: Point[] = [];

  @IsOptional()
  @IsArray()
  @IsIn(['red', 'blue'], { each: true })
  @EnumLabels({ red: 'Red', blue: 'Blue' })
  colours: string[] = ['red'];

  @IsOptional()
  @IsBoolean()
  filled: boolean = false;

  @IsOptional()
  @IsInt()
  @Min(0)
  @Max(10)
  weight: number = 1;
}

describe('classSchema', () => {
  it('produces a standalone draft 2020-12 object schema with defaults from a fresh instance', () => {
    const { schema, problems } = classSchema(Shape, { requireDefaults: true });
    expect(problems).toEqual([]);
    expect(JSON_SCHEMA_DIALECT).toBe('https://json-schema.org/draft/2020-12/schema');
    expect(schema).toEqual({
      $schema: JSON_SCHEMA_DIALECT,
      type: 'object',
      additionalProperties: false,
      required: ['name'],
      properties: {
        name: { type: 'string', maxLength: 50, description: 'What to call it.' },
        kind: { type: 'string', enum: ['circle', 'square'], 'x-enum-labels': { circle: 'Round', square: 'Four corners' }, default: 'circle' },
        notes: { type: 'string', 'x-multiline': true, default: '' },
        origin: {
          type: 'object',
          additionalProperties: false,
          required: ['x'],
          properties: { x: { type: 'integer' }, y: { type: 'integer', default: 0 } },
          default: { x: 1, y: 0 },
        },
        corners: {
          type: 'array',
          maxItems: 3,
          items: { type: 'object', additionalProperties: false, required: ['x'], properties: { x: { type: 'integer' }, y: { type: 'integer', default: 0 } } },
          default: [],
        },
        colours: expect.objectContaining({ type: 'array', 'x-enum-labels': { red: 'Red', blue: 'Blue' }, default: ['red'] }),
        filled: { type: 'boolean', default: false },
        weight: { type: 'integer', minimum: 0, maximum: 10, default: 1 },
      },
    });
  });

  it('compiles in ajv strict mode, and ajv agrees with the defaults', () => {
    const { schema } = classSchema(Shape, { requireDefaults: true });
    const validate = strictAjv().compile(schema);
    expect(validate({ name: 'a', origin: { x: 2 }, corners: [{ x: 1, y: 2 }] })).toBe(true);
    expect(validate({ name: 'a', extra: 1 })).toBe(false);
    expect(validate({ name: 'a', origin: { x: 1, z: 1 } })).toBe(false);
    expect(validate({ name: 'a', kind: 'triangle' })).toBe(false);
  });

  it('treats a required-looking field with an initializer as optional (absent input keeps the default)', () => {
    class Defaulted {
      @IsString() mode: string = 'fast';
    }
    expect(classSchema(Defaulted, { requireDefaults: true }).schema).toMatchObject({ properties: { mode: { type: 'string', default: 'fast' } } });
    expect(classSchema(Defaulted, { requireDefaults: true }).schema).not.toHaveProperty('required');
  });

  it('names every problem with its field', () => {
    class Inner {
      @IsOptional() @IsString() label?: string;
    }
    class Broken {
      @IsOptional() @IsString() loose?: string;
      @IsOptional() @ValidateNested() @Type(() => Inner) inner: Inner = new Inner();
      @IsOptional() @IsArray() @ValidateNested({ each: true }) list: Inner[] = [];
      @IsOptional() @IsString() @EnumLabels({ a: 'A' }) labelled: string = 'a';
      hidden = 1;
    }
    expect(classSchema(Broken, { requireDefaults: true }).problems).toEqual([
      'field "loose": optional field has no default (give it an initializer)',
      'field "inner.label": optional field has no default (give it an initializer)',
      'field "list": nested field needs @Type(() => TheClass) so its schema can be generated',
      'field "labelled": @EnumLabels keys [a] must equal the @IsIn values []',
      'field "hidden": field has no validation decorator, so every value of it would be refused as unknown',
    ]);
    expect(classSchema(Broken, { requireDefaults: false }).problems).toHaveLength(3);
  });

  it('refuses a class that needs constructor arguments, and one that contains itself', () => {
    class NeedsArgs {
      @IsOptional() @IsString() mode: string;
      constructor(mode: string) {
        this.mode = mode.toUpperCase();
      }
    }
    expect(classSchema(NeedsArgs, { requireDefaults: true })).toEqual({
      schema: { $schema: 'https://json-schema.org/draft/2020-12/schema', type: 'object' },
      problems: [expect.stringMatching(/^class: class NeedsArgs cannot be constructed without arguments \(.+\)$/)],
    });
    class Tree {
      @IsOptional() @IsArray() @ValidateNested({ each: true }) @Type(() => Tree) children: Tree[] = [];
    }
    expect(classSchema(Tree, { requireDefaults: true }).problems).toEqual([
      'field "children": class Tree contains itself; recursive schemas are not supported',
    ]);
  });

  it('gives a class without fields an empty object schema that refuses every property', () => {
    class Nothing {}
    const { schema } = classSchema(Nothing, { requireDefaults: true });
    expect(schema).toEqual({ $schema: 'https://json-schema.org/draft/2020-12/schema', type: 'object', properties: {}, additionalProperties: false });
    expect(strictAjv().compile(schema)({ a: 1 })).toBe(false);
  });
});
