import { createHash } from 'node:crypto';
import { CapabilityDescriptor, catalogView } from './capability-catalog';
import { CATALOG_ANSWERS_BYTES, CatalogAnswers } from './catalog-answers';

function descriptor(id: string, scopes: string[], extra: Partial<CapabilityDescriptor> = {}): CapabilityDescriptor {
  return {
    id, name: id, category: 'test', description: `The ${id} capability.`, tags: [], profiles: [], workerTypes: [], scopes,
    sideEffecting: false, risk: 'read_only', promptGuidance: '', tools: [], configSchema: { type: 'object' }, ...extra,
  };
}

describe('CatalogAnswers', () => {
  const catalog = [descriptor('a', []), descriptor('b', ['b:use'], { category: 'other' })];

  it('answers exactly what the catalog view says, with the ETag of that body', () => {
    const answers = new CatalogAnswers(catalog);
    for (const [filter, scopes] of [[{}, undefined], [{}, ['b:use']], [{ category: 'other' }, []]] as const) {
      const { body, etag } = answers.answer(filter, scopes);
      expect(body).toBe(JSON.stringify({ items: catalogView(catalog, filter, scopes) }));
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

  it('tells an organization with no scopes apart from the platform admin (no `available`)', () => {
    const answers = new CatalogAnswers(catalog);
    expect(JSON.parse(answers.answer({}, []).body).items[1].available).toBe(false);
    expect(JSON.parse(answers.answer({}).body).items[1]).not.toHaveProperty('available');
  });

  it('keeps fewer answers of a larger catalog, within a memory budget', () => {
    expect(new CatalogAnswers(catalog).capacity).toBe(256);
    const huge = [descriptor('big', [], { description: 'x'.repeat(CATALOG_ANSWERS_BYTES / 16) })];
    expect(new CatalogAnswers(huge).capacity).toBe(15);
    const larger = [descriptor('bigger', [], { description: 'x'.repeat(CATALOG_ANSWERS_BYTES) })];
    expect(new CatalogAnswers(larger).capacity).toBe(8);
  });
});
