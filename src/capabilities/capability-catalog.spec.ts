import { CapabilityDescriptor, catalogView, highestRisk, matchesFilter } from './capability-catalog';

const descriptor = (overrides: Partial<CapabilityDescriptor>): CapabilityDescriptor => ({
  id: 'x',
  name: 'X',
  category: 'c',
  description: 'd',
  tags: [],
  profiles: [],
  workerTypes: [],
  scopes: [],
  sideEffecting: false,
  risk: 'read_only',
  promptGuidance: '',
  tools: [],
  configSchema: {},
  ...overrides,
});

describe('catalog', () => {
  it('takes the highest risk of the tools, read_only without tools', () => {
    expect(highestRisk([])).toBe('read_only');
    expect(highestRisk(['read_only', 'destructive', 'mutating'])).toBe('destructive');
    expect(highestRisk(['mutating', 'read_only'])).toBe('mutating');
  });

  it('treats empty profiles and worker types as "applies to all"', () => {
    const everywhere = descriptor({});
    const support = descriptor({ profiles: ['support'], workerTypes: ['chat'] });
    expect(matchesFilter(everywhere, { profile: 'sales', workerType: 'voice' })).toBe(true);
    expect(matchesFilter(support, { profile: 'sales' })).toBe(false);
    expect(matchesFilter(support, { workerType: 'voice' })).toBe(false);
    expect(matchesFilter(support, { profile: 'support', workerType: 'chat' })).toBe(true);
  });

  it('adds availability only when scopes are given, without touching the shared catalog', () => {
    const catalog = Object.freeze([descriptor({ id: 'a', scopes: ['notes:write', 'notes:read'] }), descriptor({ id: 'b' })]);
    expect(catalogView(catalog, {})).toEqual(catalog);
    expect(catalogView(catalog, {}, ['notes:read']).map((d) => [d.id, d.available])).toEqual([
      ['a', false],
      ['b', true],
    ]);
    expect(catalogView(catalog, {}, ['notes:read', 'notes:write'])[0].available).toBe(true);
    expect(catalog[0]).not.toHaveProperty('available');
  });
});
