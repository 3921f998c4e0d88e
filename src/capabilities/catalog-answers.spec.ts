import { createHash } from 'node:crypto';
import { CapabilityDescriptor, catalogView } from './capability-catalog';
import { ApiError } from '../common/api-error';
import { encodeCursor } from '../common/pagination';
import { CATALOG_ANSWERS_BYTES, CatalogAnswers } from './catalog-answers';

function descriptor(id: string, scopes: string[], extra: Partial<CapabilityDescriptor> = {}): CapabilityDescriptor {
  return {
    id,
    name: id,
    category: 'test',
    description: `The ${id} capability.`,
    tags: [],
    profiles: [],
    workerTypes: [],
    scopes,
    sideEffecting: false,
    risk: 'read_only',
    promptGuidance: '',
    tools: [],
    configSchema: { type: 'object' },
    ...extra,
  };
}

describe('CatalogAnswers', () => {
  const catalog = [descriptor('a', []), descriptor('b', ['b:use'], { category: 'other' })];

  it('answers exactly what the catalog view says, with the ETag of that body', () => {
    const answers = new CatalogAnswers(catalog);
    for (const [filter, scopes] of [
      [{}, undefined],
      [{}, ['b:use']],
      [{ category: 'other' }, []],
    ] as const) {
      const { body, etag } = answers.answer(filter, scopes);
      expect(body.toString()).toBe(JSON.stringify({ items: catalogView(catalog, filter, scopes), nextCursor: null }));
      expect(etag).toBe(`"${createHash('sha256').update(body).digest('base64url')}"`);
    }
  });

  it('makes each answer once per filter and set of scopes, whatever their order or repetition', () => {
    const answers = new CatalogAnswers(catalog);
    const first = answers.answer({ tag: 'x' }, ['z', 'b:use']);
    expect(answers.answer({ tag: 'x' }, ['b:use', 'z', 'z'])).toBe(first);
    expect(answers.answer({ tag: 'y' }, ['b:use', 'z'])).not.toBe(first);
    expect(answers.answer({ tag: 'x' }, ['b:use'])).not.toBe(first);
  });

  it('answers a page at a time, each page kept apart, and refuses a cursor it did not issue', () => {
    const answers = new CatalogAnswers(catalog);
    const first = JSON.parse(answers.answer({}, undefined, { limit: 1 }).body.toString());
    expect(first).toEqual({ items: [expect.objectContaining({ id: 'a' })], nextCursor: encodeCursor(['a']) });
    const second = JSON.parse(answers.answer({}, undefined, { limit: 1, cursor: first.nextCursor }).body.toString());
    expect(second).toEqual({ items: [expect.objectContaining({ id: 'b' })], nextCursor: null });
    expect(answers.answer({}, undefined, { limit: 1 })).toBe(answers.answer({}, undefined, { limit: 1 }));
    expect(answers.answer({}, undefined, { limit: 1 })).not.toBe(answers.answer({}, undefined, { limit: 2 }));
    expect(() => answers.answer({}, undefined, { cursor: 'nope!' })).toThrow(ApiError);
  });

  it('tells an organization with no scopes apart from the platform admin (no `available`)', () => {
    const answers = new CatalogAnswers(catalog);
    expect(JSON.parse(answers.answer({}, []).body.toString()).items[1].available).toBe(false);
    expect(JSON.parse(answers.answer({}).body.toString()).items[1]).not.toHaveProperty('available');
  });

  it('keeps fewer answers of a larger catalog, within a memory budget', () => {
    expect(new CatalogAnswers(catalog).capacity).toBe(256);
    const huge = [descriptor('big', [], { description: 'x'.repeat(CATALOG_ANSWERS_BYTES / 16) })];
    expect(new CatalogAnswers(huge).capacity).toBe(15);
    const larger = [descriptor('bigger', [], { description: 'x'.repeat(CATALOG_ANSWERS_BYTES) })];
    expect(new CatalogAnswers(larger).capacity).toBe(8);
  });
});
