import { Type } from 'class-transformer';
import { IsInt, IsOptional, IsString, Max, ValidateNested } from 'class-validator';
import { ApiError } from './api-error';
import { createValidationPipe, flattenValidationErrors, joinPath } from './validation';

class Inner {
  @IsInt() units: number;
}
class Outer {
  @IsString() name: string;
  @ValidateNested({ each: true }) @Type(() => Inner) items: Inner[];
}

class Listing {
  @IsOptional() @IsInt() @Max(100) limit: number = 20;
  @IsOptional() @IsString() cursor?: string;
}

describe('request validation', () => {
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

  it('flattens an empty tree to nothing', () => {
    expect(flattenValidationErrors([])).toEqual([]);
  });
});
