import { ToolReferences } from './tool-references';

describe('ToolReferences', () => {
  it('names the offered tools in backticks and as bare snake_case ids, in one pass (a swap stays a swap)', () => {
    const refs = ToolReferences.of({ search_knowledge: { name: 'read_document' }, read_document: { name: 'search_knowledge' } });
    expect(refs.text('Search with `search_knowledge`, then read with read_document.')).toBe('Search with `read_document`, then read with search_knowledge.');
  });

  it('leaves prose alone: an English-word id only in backticks, ids inside longer words never', () => {
    const refs = ToolReferences.of({ remember: { name: 'note' }, load_skill: { name: 'skill_load' } });
    expect(refs.text('Keep it with `remember` if you do not remember it yet.')).toBe('Keep it with `note` if you do not remember it yet.');
    expect(refs.text('load_skill, preload_skill, load_skills, load_skill-x and `load_skill`.')).toBe(
      'skill_load, preload_skill, load_skills, load_skill-x and `skill_load`.',
    );
  });

  it('ignores MCP keys, descriptions-only overrides and names equal to the id; with no rename, nothing is copied', () => {
    const refs = ToolReferences.of({ 'vendor/search': { name: 'find' }, clock_now: { description: 'x' }, think: { name: 'think' } });
    expect(refs.empty).toBe(true);
    expect(refs).toBe(ToolReferences.none);
    const schema = { type: 'object' };
    expect(refs.schema(schema)).toBe(schema);
    expect(ToolReferences.of(new Map([['load_skill', { name: 'use_skill' }]])).text('load_skill')).toBe('use_skill');
  });

  it('rewrites only the descriptions of a schema, in a copy made once, keeping every key', () => {
    const refs = ToolReferences.of({ search_knowledge: { name: 'kb_search' } });
    const schema = JSON.parse(
      '{"type":"object","description":"see search_knowledge","properties":{"documentId":{"type":"string","description":"The documentId that search_knowledge returned.","default":"search_knowledge"},"__proto__":{"description":"search_knowledge"}},"required":["documentId"]}',
    ) as Record<string, unknown>;
    const resolved = refs.schema(schema);
    expect(resolved).toEqual(
      JSON.parse(
        '{"type":"object","description":"see kb_search","properties":{"documentId":{"type":"string","description":"The documentId that kb_search returned.","default":"search_knowledge"},"__proto__":{"description":"kb_search"}},"required":["documentId"]}',
      ),
    );
    expect(Object.getPrototypeOf((resolved.properties as object) ?? {})).toBe(Object.prototype);
    expect(refs.schema(schema)).toBe(resolved);
    expect((schema.properties as { documentId: { description: string } }).documentId.description).toBe('The documentId that search_knowledge returned.');
  });
});
