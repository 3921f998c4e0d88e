import { TestingModule } from '@nestjs/testing';
import { FixtureCapabilitiesModule, NotesLimits, SearchNotesInput } from '../../test/fixtures/fixture-capabilities';
import { strictAjv } from '../../test/support/json-schema';
import { bootRegistry } from '../../test/support/capability-registry';
import { ClockCapabilityModule } from './builtin/clock/clock.module';
import { CapabilityRegistry } from './capability-registry.service';
import { buildContext } from '../../test/fixtures/build-context';
describe('CapabilityRegistry', () => {
  let moduleRef: TestingModule;
  let registry: CapabilityRegistry;
  beforeAll(async () => {
    ({ registry, moduleRef } = await bootRegistry([ClockCapabilityModule, FixtureCapabilitiesModule]));
  });
  afterAll(() => moduleRef.close());

  it('lists capabilities sorted by id and finds them by id', () => {
    const ids = registry.all().map((c) => c.definition.id);
    expect(ids).toEqual([...ids].sort());
    expect(ids).toEqual(['clock', 'fixture-echo', 'fixture-notes']);
    expect(registry.get('fixture-notes')?.tools.map((t) => [t.declaration.id, t.requiresApproval])).toEqual([
      ['search_notes', false],
      ['write_note', true],
      ['delete_note', true],
    ]);
    expect(registry.get('fixture-echo')?.tools[0].requiresApproval).toBe(true);
    expect(registry.get('nope')).toBeUndefined();
    expect(registry.catalog().map((d) => d.id)).toEqual(ids);
    expect(Object.isFrozen(registry.catalog()[0].configSchema)).toBe(true);
  });

  describe('validateConfig', () => {
    it('fills every default, also nested ones', () => {
      expect(registry.validateConfig('fixture-notes', undefined)).toEqual({
        value: { units: 'metric', style: '', limits: { maxNotes: 10 }, labels: [] },
        errors: [],
      });
      expect(registry.validateConfig('fixture-notes', { limits: {}, units: 'imperial' })).toEqual({
        value: { units: 'imperial', style: '', limits: { maxNotes: 10 }, labels: [] },
        errors: [],
      });
      expect(registry.validateConfig('clock', {})).toEqual({ value: { timezone: 'UTC' }, errors: [] });
      expect(registry.validateConfig('fixture-echo', {})).toEqual({ value: {}, errors: [] });
    });

    it('names each bad field relative to the config, unknown ones included', () => {
      const { errors } = registry.validateConfig('fixture-notes', { units: 'parsecs', limits: { maxNotes: 0, extra: 1 }, colour: 'red', labels: ['a', 5] });
      expect(errors.map((e) => [e.path, e.code])).toEqual(
        expect.arrayContaining([
          ['units', 'isIn'],
          ['limits.maxNotes', 'min'],
          ['limits.extra', 'unknown_property'],
          ['colour', 'unknown_property'],
          ['labels[1]', 'isString'],
        ]),
      );
      expect(registry.validateConfig('fixture-echo', { x: 1 }).errors).toEqual([{ path: 'x', code: 'unknown_property', message: expect.any(String) }]);
    });

    it('refuses a config that is not an object, and null where a default would be overwritten', () => {
      for (const bad of [null, [], 'UTC', 3]) {
        expect(registry.validateConfig('clock', bad).errors).toEqual([{ path: '', code: 'isObject', message: 'must be an object' }]);
      }
      expect(registry.validateConfig('clock', { timezone: null }).errors).toEqual([{ path: 'timezone', code: 'isNotNull', message: expect.any(String) }]);
      expect(registry.validateConfig('fixture-notes', { labels: [null] }).errors.map((e) => e.path)).toEqual(['labels[0]']);
      expect(registry.validateConfig('fixture-notes', { limits: { maxNotes: null } }).errors.map((e) => e.path)).toEqual(['limits.maxNotes']);
    });

    it('throws for an unknown capability (callers check the id first)', () => {
      expect(() => registry.validateConfig('nope', {})).toThrow('No capability "nope" is registered');
    });
  });

  describe('validateToolInput', () => {
    it('gives an instance of the input class with defaults, and its JSON form', () => {
      const result = registry.validateToolInput('fixture-notes', 'search_notes', { query: 'invoices' });
      expect(result.errors).toEqual([]);
      expect(result.value).toBeInstanceOf(SearchNotesInput);
      expect(result.value).toEqual(Object.assign(new SearchNotesInput(), { query: 'invoices', limit: 5 }));
      expect(result.plain).toEqual({ query: 'invoices', limit: 5 });
      expect(Object.getPrototypeOf(result.plain)).toBe(Object.prototype);
    });

    it('refuses unknown properties, wrong types and missing fields, with relative paths', () => {
      const { errors } = registry.validateToolInput('fixture-notes', 'search_notes', { limit: '3', sql: 'drop' });
      expect(errors.map((e) => [e.path, e.code])).toEqual(
        expect.arrayContaining([
          ['query', 'isString'],
          ['limit', 'isInt'],
          ['sql', 'unknown_property'],
        ]),
      );
      expect(registry.validateToolInput('fixture-notes', 'search_notes', 'x').errors[0]).toMatchObject({ path: '', code: 'isObject' });
    });

    it('throws for a tool the capability does not declare', () => {
      expect(() => registry.validateToolInput('fixture-notes', 'echo', {})).toThrow('Capability "fixture-notes" declares no tool "echo"');
    });
  });

  describe('build', () => {
    it('stamps the contribution with the capability id', async () => {
      const built = await registry.build('fixture-notes', buildContext(registry.validateConfig('fixture-notes', {}).value));
      expect(built?.capabilityId).toBe('fixture-notes');
      expect(built?.tools.map((t) => t.id)).toEqual(['search_notes', 'write_note', 'delete_note']);
      expect(built?.settings).toEqual({ units: 'metric' });
      const clock = await registry.build('clock', buildContext({ timezone: 'UTC' }));
      expect(clock).toEqual({ capabilityId: 'clock', tools: [], prompt: expect.stringMatching(/^Current date and time: .* in UTC \(UTC\+00:00\)\.$/) });
    });
  });

  it('serves schemas that compile in ajv strict mode, for every registered capability', () => {
    const ajv = strictAjv();
    for (const descriptor of registry.catalog()) {
      const config = ajv.compile(descriptor.configSchema);
      expect(config(registry.validateConfig(descriptor.id, {}).value)).toBe(true);
      descriptor.tools.forEach((tool) => ajv.compile(tool.inputSchema));
    }
    const search = ajv.compile(registry.get('fixture-notes')!.tools[0].inputSchema);
    expect(search(registry.validateToolInput('fixture-notes', 'search_notes', { query: 'x' }).plain)).toBe(true);
    expect(search({ query: 'x', sql: 'drop' })).toBe(false);
  });

  it('keeps NotesLimits defaults in the schema', () => {
    expect(registry.get('fixture-notes')?.configSchema).toMatchObject({ properties: { limits: { default: { ...new NotesLimits() } } } });
  });
});
