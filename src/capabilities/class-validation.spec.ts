import { Type } from 'class-transformer';
import { IsArray, IsInt, IsObject, IsOptional, IsString, ValidateNested } from 'class-validator';
import { validateWithClass } from './class-validation';

class Part {
  @IsString() label: string;
  @IsOptional() @IsObject() extra?: Record<string, unknown>;
}
class Args {
  @IsString() query: string;
  @IsOptional() @IsObject() metadata?: Record<string, unknown>;
  @IsOptional() @ValidateNested({ each: true }) @Type(() => Part) parts?: Part[];
  @IsOptional() @IsInt() limit?: number = 5;
}

class Words {
  @IsArray() @IsString({ each: true }) words: string[];
}

describe('validateWithClass', () => {
  it("keeps a free-form value's keys named like prototype members, at any depth, as data in the plain form that is hashed and stored", () => {
    const input = JSON.parse(
      '{"query":"q","metadata":{"constructor":1,"__proto__":{"a":1},"toString":{"constructor":2}},"parts":[{"label":"p","extra":{"constructor":{"prototype":1}}}]}',
    ) as unknown;
    const { errors, plain } = validateWithClass(Args, input);
    expect(errors).toEqual([]);
    expect(JSON.stringify(plain)).toBe(
      '{"query":"q","metadata":{"constructor":1,"__proto__":{"a":1},"toString":{"constructor":2}},"parts":[{"label":"p","extra":{"constructor":{"prototype":1}}}],"limit":5}',
    );
    expect(Object.getPrototypeOf(plain.metadata)).toBe(Object.prototype);
  });

  it('names the field when a value that must not be an object holds such a key, instead of failing', () => {
    for (const key of ['constructor', '__proto__', 'prototype']) {
      const { errors } = validateWithClass(Args, JSON.parse(`{"query":{"${key}":1},"parts":[{"label":[{"${key}":1}]}]}`));
      expect([key, errors.map((e) => `${e.path} ${e.code}`)]).toEqual([key, ['query isString', 'parts[0].label isString']]);
    }
  });

  it("counts a list's bad elements past the first 50, its nulls among them: not one more problem a null", () => {
    const input = { words: [...new Array<number>(60).fill(1), null, null] };
    const { errors, omitted } = validateWithClass(Words, input);
    expect([errors.length, errors[0].path, errors[49].path, omitted]).toEqual([50, 'words[0]', 'words[49]', 12]);
    const few = validateWithClass(Words, { words: ['a', null] });
    expect([few.errors, few.omitted]).toEqual([[{ path: 'words[1]', code: 'isString', message: 'words[1] must be a string' }], undefined]);
  });

  it('names the first nulls of free-form values and counts the rest; a refused field is not entered', () => {
    const metadata = Object.fromEntries(Array.from({ length: 120 }, (_, i) => [`k${i}`, null]));
    const { errors, omitted, plain } = validateWithClass(Args, { query: 'q', metadata });
    expect([errors.length, errors[0], errors[49].path, omitted]).toEqual([
      50,
      { path: 'metadata.k0', code: 'isNotNull', message: 'metadata.k0 must not be null; leave it out to use the default' },
      'metadata.k49',
      70,
    ]);
    // A null inside a list of a free-form value, named at its index.
    expect(validateWithClass(Args, { query: 'q', metadata: { list: [1, null] } }).errors).toEqual([
      { path: 'metadata.list[1]', code: 'isNotNull', message: 'metadata.list[1] must not be null; leave it out to use the default' },
    ]);
    // Refused arguments still have their plain form when asked for it.
    expect(plain).toEqual({ query: 'q', metadata, limit: 5 });
    const refused = validateWithClass(Args, { query: [null, { a: null }], parts: [{ label: 'p', extra: { n: null } }] });
    expect(refused.errors.map((e) => `${e.path} ${e.code}`)).toEqual(['query isString', 'parts[0].extra.n isNotNull']);
  });
});
