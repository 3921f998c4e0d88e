import { Type as TypeOf } from 'class-transformer';
import type { Type } from '@nestjs/common';
import {
  ArrayMaxSize,
  IsArray,
  IsInt,
  IsObject,
  IsOptional,
  IsString,
  Matches,
  Max,
  MaxLength,
  ValidateBy,
  ValidateNested,
  validateSync,
} from 'class-validator';
import { ApiError } from './api-error';
import { EntriesIn } from './bounded-transform';
import { createValidationPipe, flattenValidationErrors, joinPath, VALID_QUERIES_PER_CLASS } from './validation';

class Inner {
  @IsInt() units: number;
}
class Outer {
  @IsString() name: string;
  @ValidateNested({ each: true }) @TypeOf(() => Inner) items: Inner[];
}

class Listing {
  @IsOptional() @IsInt() @Max(100) limit: number = 20;
  @IsOptional() @IsString() cursor?: string;
}

/** Counts how often its class is validated: a query answered from what was validated before is not. */
let validations = 0;
class Counted {
  @IsOptional() @TypeOf(() => Number) @IsInt() @Max(100) limit?: number;
  @IsOptional() @IsString({ each: true }) tag?: string | string[];
  @ValidateBy({ name: 'counted', validator: { validate: () => (validations++, true) } }) always?: string = 'x';
}
class OtherCounted extends Counted {}

class Flags {
  @EntriesIn(['on'], 3, (path) => `${path} must be "on"`)
  @ValidateBy({ name: 'isFlags', validator: { validate: (v: unknown) => typeof v === 'object' && v !== null && Object.keys(v).length <= 3 } })
  flags: Record<string, 'on'>;
}
class MoreFlags extends Flags {}
class HoldsFlags {
  @IsInt() n: number;
  @ValidateNested({ each: true }) @TypeOf(() => MoreFlags) list: MoreFlags[];
}

class Named {
  @IsString() name: string;
}
class ByKey {
  @IsObject() @ValidateNested({ each: true }) @TypeOf(() => Named) byKey: Map<string, Named>;
}

class Tagged {
  @IsString() @MaxLength(5) name: string;
  @IsArray() @ArrayMaxSize(3) @IsString({ each: true }) @Matches(/^[a-z]+$/, { each: true }) tags: string[];
}

/** Counts its instances: a list where one object belongs must not build one per element. */
let settingsBuilt = 0;
class Settings {
  @IsOptional() @IsInt() level?: number;
  constructor() {
    settingsBuilt++;
  }
}
class HoldsSettings {
  @IsOptional() @IsObject() @ValidateNested() @TypeOf(() => Settings) settings?: Settings;
  @IsOptional() @IsArray() @ValidateNested({ each: true }) @TypeOf(() => Settings) many?: Settings[];
}

/** As a key's roles: a rule on each element, no size (its uniqueness bounds it). */
class Labels {
  @IsString() @MaxLength(5) name: string;
  @IsArray() @Matches(/^[a-z]+$/, { each: true }) tags: string[];
}

describe('request validation', () => {
  it('reports a wrong type once, and each bad element of a list at its index, once', async () => {
    const refused = (body: object) =>
      createValidationPipe()
        .transform(body, { type: 'body', metatype: Tagged })
        .then(
          () => [],
          (e: ApiError) => e.errors!.map((x) => `${x.path} ${x.code}`),
        );
    expect(await refused({ tags: { 0: 'a' } })).toEqual(['name isString', 'tags isArray']);
    expect(await refused({ name: 'ok', tags: ['a', 'B', 7] })).toEqual(['tags[1] matches', 'tags[2] isString']);
  });

  it("names a list's first 50 bad elements and counts the rest without building them", async () => {
    const refusal = (body: object) =>
      createValidationPipe()
        .transform(body, { type: 'body', metatype: Labels })
        .then(
          () => undefined,
          (e: ApiError) => ({ paths: e.errors!.map((x) => x.path), omitted: e.extensions?.errorsOmitted }),
        );
    // Each element that breaks a rule is one problem: 300,000 were built (0.2 to 0.3 s of the node) to answer 50.
    const many = await refusal({ name: 'far too long', tags: new Array(300_000).fill('B') });
    expect(many).toEqual({ paths: ['name', ...Array.from({ length: 49 }, (_, i) => `tags[${i}]`)], omitted: 300_000 - 49 });
    const flat = flattenValidationErrors(
      validateSync(Object.assign(new Labels(), { name: 'ok', tags: ['B', 'a', ...new Array<string>(99).fill('C')] }), {
        validationError: { target: true, value: true },
      }),
    );
    expect([flat.errors.length, flat.errors[0].path, flat.errors[1].path, flat.errors[49].path, flat.omitted, flat.counted]).toEqual([
      50,
      'tags[0]',
      'tags[2]',
      'tags[50]',
      50,
      ['tags'],
    ]);
    // Under 51 bad elements nothing is counted.
    const few = await refusal({ name: 'ok', tags: ['a', ...new Array<string>(50).fill('B')] });
    expect([few!.paths.length, few!.paths[49], few!.omitted]).toEqual([50, 'tags[50]', undefined]);
  });

  it('refuses a list where an object belongs by its type alone, without building an instance an element', async () => {
    const pipe = createValidationPipe();
    const refusal = (body: object) =>
      pipe.transform(body, { type: 'body', metatype: HoldsSettings }).then(
        () => undefined,
        (e: ApiError) => ({ errors: e.errors, omitted: e.extensions?.errorsOmitted }),
      );
    settingsBuilt = 0;
    // 120,000 built and validated to answer this one line: 3.4 s of a draft's `model` (session 45).
    expect(await refusal({ settings: new Array(100_000).fill(0).map(() => ({ level: 'x' })) })).toEqual({
      errors: [{ path: 'settings', code: 'isObject', message: 'settings must be an object' }],
      omitted: undefined,
    });
    expect(await refusal({ settings: [1, 2] })).toEqual({
      errors: [{ path: 'settings', code: 'isObject', message: 'settings must be an object' }],
      omitted: undefined,
    });
    // class-transformer makes one of the empty list it is given in the list's place: one a request, not one an element.
    expect(settingsBuilt).toBeLessThanOrEqual(2);
    // A list is still built element by element, an object as one.
    expect(await pipe.transform({ settings: { level: 1 }, many: [{ level: 2 }, {}] }, { type: 'body', metatype: HoldsSettings })).toEqual(
      Object.assign(new HoldsSettings(), {
        settings: Object.assign(new Settings(), { level: 1 }),
        many: [Object.assign(new Settings(), { level: 2 }), new Settings()],
      }),
    );
    expect(await refusal({ many: [{ level: 'x' }] })).toEqual({
      errors: [{ path: 'many[0].level', code: 'isInt', message: 'level must be an integer number' }],
      omitted: undefined,
    });
  });

  it('joins paths the way clients read them', () => {
    expect(joinPath('', 'a')).toBe('a');
    expect(joinPath('a', '0')).toBe('a[0]');
    expect(joinPath('a[0]', 'b')).toBe('a[0].b');
  });

  it('reports one entry per problem, naming nested fields and unknown properties', async () => {
    const pipe = createValidationPipe();
    const error = await pipe.transform({ name: 5, items: [{ units: 1 }, { units: 'x', extra: true }], orgId: 'x' }, { type: 'body', metatype: Outer }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(ApiError);
    const apiError = error as ApiError;
    expect(apiError.status).toBe(400);
    expect(apiError.code).toBe('invalid_request');
    expect(apiError.errors).toEqual(
      expect.arrayContaining([
        { path: 'name', code: 'isString', message: expect.any(String) },
        { path: 'items[1].units', code: 'isInt', message: expect.any(String) },
        { path: 'items[1].extra', code: 'unknown_property', message: 'property extra is not allowed' },
        { path: 'orgId', code: 'unknown_property', message: 'property orgId is not allowed' },
      ]),
    );
  });

  it('a key named like a prototype member inside an unknown property, a free-form value or a nested object is a 400 or data, never a crash', async () => {
    const pipe = createValidationPipe();
    const outcome = (body: string, metatype: Type<object>) =>
      pipe.transform(JSON.parse(body), { type: 'body', metatype }).then(
        (v: object) => ['ok', v] as const,
        (e: unknown) => ['refused', (e as ApiError).errors?.map((x) => `${x.path} ${x.code}`)] as const,
      );
    for (const key of ['constructor', 'prototype', 'toString', 'hasOwnProperty', '__proto__']) {
      expect(await outcome(`{"name":"n","items":[],"x":{"${key}":1}}`, Outer)).toEqual(['refused', ['x unknown_property']]);
      expect(await outcome(`{"name":"n","items":[],"x":[{"${key}":{"${key}":1}}]}`, Outer)).toEqual(['refused', ['x unknown_property']]);
      expect(await outcome(`{"name":"n","items":[{"units":1,"${key}":{"a":1}}]}`, Outer)).toEqual(['refused', [`items[0].${key} unknown_property`]]);
      expect(await outcome(`{"n":1,"list":[{"flags":{"a":"on"},"y":{"${key}":1}}]}`, HoldsFlags)).toEqual(['refused', ['list[0].y unknown_property']]);
      expect(await outcome(`{"byKey":{"a":{"name":"x","${key}":{"b":1}}}}`, ByKey)).toEqual(['refused', [`byKey.a.${key} unknown_property`]]);
      const [kept, value] = await outcome(`{"byKey":{"${key}":{"name":"x"}}}`, ByKey);
      expect(kept).toBe('ok');
      expect([...(value as ByKey).byKey].map(([k, v]) => [k, v instanceof Named, v.name])).toEqual([[key, true, 'x']]);
    }
  });

  it('names each bad entry of a dictionary with an entry rule, in nested and derived classes, with the other problems', async () => {
    const pipe = createValidationPipe();
    const refused = (body: unknown) =>
      pipe.transform(body, { type: 'body', metatype: HoldsFlags }).then(
        () => undefined,
        (e: unknown) => (e as ApiError).errors,
      );
    expect(await refused({ n: 'x', list: [{ flags: { a: 'on', b: 'off', ['__proto__']: 1 } }] })).toEqual([
      { path: 'list[0].flags.b', code: 'isIn', message: 'list[0].flags.b must be "on"' },
      { path: 'list[0].flags.__proto__', code: 'isIn', message: 'list[0].flags.__proto__ must be "on"' },
      { path: 'n', code: 'isInt', message: expect.any(String) },
    ]);
    // Past the size the entries are not read: the property's own rule answers, once.
    expect(await refused({ n: 1, list: [{ flags: { a: 'x', b: 'x', c: 'x', d: 'x' } }] })).toEqual([
      { path: 'list[0].flags', code: 'isFlags', message: expect.any(String) },
    ]);
    const ok = (await pipe.transform({ n: 1, list: [{ flags: { a: 'on' } }] }, { type: 'body', metatype: HoldsFlags })) as HoldsFlags;
    expect(ok.list[0].flags).toEqual({ a: 'on' });
  });

  it('answers an empty query with a fresh instance and its defaults every time, and still refuses {} where it is invalid', async () => {
    const pipe = createValidationPipe();
    const first = (await pipe.transform({}, { type: 'query', metatype: Listing })) as Listing;
    expect(first).toBeInstanceOf(Listing);
    expect(first).toEqual({ limit: 20 });
    first.limit = 99;
    const second = (await pipe.transform({}, { type: 'query', metatype: Listing })) as Listing;
    expect(second).not.toBe(first);
    expect(second).toEqual({ limit: 20 });
    // Known valid when empty does not make a non-empty query valid.
    await expect(pipe.transform({ limit: 101 }, { type: 'query', metatype: Listing })).rejects.toMatchObject({ errors: [{ path: 'limit', code: 'max' }] });
    for (let i = 0; i < 2; i++) {
      await expect(pipe.transform({}, { type: 'body', metatype: Outer })).rejects.toMatchObject({ code: 'invalid_request' });
    }
  });

  it('validates a query once: the same query again is a fresh copy of the instance, a refusal is refused every time', async () => {
    const pipe = createValidationPipe();
    const query = (value: unknown, metatype: typeof Counted = Counted) => pipe.transform(value, { type: 'query', metatype }) as Promise<Counted>;
    validations = 0;
    const first = await query({ limit: '7' });
    expect(first).toBeInstanceOf(Counted);
    expect(first).toEqual({ limit: 7, always: 'x' });
    first.limit = 99;
    const second = await query({ limit: '7' });
    expect(second).not.toBe(first);
    expect(second).toBeInstanceOf(Counted);
    expect(second).toEqual({ limit: 7, always: 'x' });
    expect(validations).toBe(1);
    // Another query, another class: validated on their own.
    await query({ limit: '8' });
    await query({ limit: '7' }, OtherCounted);
    expect(validations).toBe(3);
    // Refusals are never kept.
    for (let i = 0; i < 2; i++) await expect(query({ limit: '101' })).rejects.toMatchObject({ errors: [{ path: 'limit', code: 'max' }] });
    for (let i = 0; i < 2; i++)
      await expect(query({ limit: '7', extra: '1' })).rejects.toMatchObject({ errors: [{ path: 'extra', code: 'unknown_property' }] });
    for (let i = 0; i < 2; i++) await expect(query({ tag: 'a\u0000b' })).rejects.toMatchObject({ errors: [{ path: 'tag' }] });
    // A query holding a list is validated each time (its instance is not plain values).
    validations = 0;
    const lists = [await query({ tag: ['a', 'b'] }), await query({ tag: ['a', 'b'] })];
    expect(lists[0].tag).not.toBe(lists[1].tag);
    expect(validations).toBe(2);
  });

  it('keeps a bounded number of queries per class, forgetting the least recently used', async () => {
    const pipe = createValidationPipe();
    const query = (tag: string) => pipe.transform({ tag }, { type: 'query', metatype: OtherCounted });
    for (let i = 0; i <= VALID_QUERIES_PER_CLASS; i++) await query(`t${i}`);
    validations = 0;
    await query(`t${VALID_QUERIES_PER_CLASS}`);
    expect(validations).toBe(0);
    await query('t0');
    expect(validations).toBe(1);
  });

  it('flattens an empty tree to nothing', () => {
    expect(flattenValidationErrors([])).toEqual({ errors: [], omitted: 0, counted: [] });
  });
});
