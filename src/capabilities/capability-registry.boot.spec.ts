import { Inject, Injectable, Scope } from '@nestjs/common';
import { REQUEST } from '@nestjs/core';
import { Type as TransformType } from 'class-transformer';
import { IsIn, IsInt, IsOptional, IsString, ValidateNested } from 'class-validator';
import { baseDefinition, capabilityClass, moduleOf, TextInput } from '../../test/fixtures/capability-factory';
import { FixtureCapabilitiesModule } from '../../test/fixtures/fixture-capabilities';
import { bootRegistry } from '../../test/support/capability-registry';
import { ClockCapabilityModule } from './builtin/clock/clock.module';
import { Capability } from './capability.decorator';
import { CapabilityRegistrationError } from './capability.errors';
import { EnumLabels } from './form-hints.decorator';

/** Boots the registry over the given providers and returns the refusal's message (fails if it boots). */
async function refusal(...providers: Parameters<typeof moduleOf>): Promise<string> {
  const booted = bootRegistry([moduleOf(...providers)]);
  await expect(booted).rejects.toBeInstanceOf(CapabilityRegistrationError);
  return ((await booted.catch((e: unknown) => e)) as Error).message;
}

const def = (overrides: Record<string, unknown>) => ({ ...baseDefinition(), ...overrides });
const tool = (overrides: Record<string, unknown>) => ({ ...baseDefinition().tools[0], ...overrides });

describe('CapabilityRegistry boot refusals', () => {
  it('boots a well-formed set', async () => {
    const { registry, moduleRef } = await bootRegistry([ClockCapabilityModule, FixtureCapabilitiesModule, moduleOf(capabilityClass(baseDefinition()))]);
    expect(registry.all().map((c) => c.definition.id)).toEqual(['clock', 'fixture-echo', 'fixture-notes', 'fixture-probe']);
    await moduleRef.close();
  });

  it('refuses a duplicate capability id, naming both providers', async () => {
    const { registry, moduleRef } = await bootRegistry([]);
    expect(registry.all()).toEqual([]);
    await moduleRef.close();
    const booted = bootRegistry([ClockCapabilityModule, moduleOf(capabilityClass(def({ id: 'clock', tools: [] }), { className: 'OtherClock' }))]);
    await expect(booted).rejects.toThrow(
      /capability "clock" \((ClockCapability|OtherClock)\): id "clock" is already registered by (OtherClock|ClockCapability)/,
    );
  });

  it('refuses a tool id declared by two capabilities', async () => {
    const message = await refusal(
      capabilityClass(def({ id: 'fixture-a', tools: [tool({ id: 'shared' })] }), { className: 'A' }),
      capabilityClass(def({ id: 'fixture-b', tools: [tool({ id: 'shared' })] }), { className: 'B' }),
    );
    expect(message).toMatch(/tool id "shared" is already declared by capability "fixture-(a|b)"/);
  });

  it('refuses a tool id declared twice by one capability', async () => {
    expect(await refusal(capabilityClass(def({ tools: [tool({ id: 'twice' }), tool({ id: 'twice' })] })))).toContain(
      'tool id "twice" is already declared by capability "fixture-probe"',
    );
  });

  it.each([
    ['has a space', 'search notes'],
    ['starts with a digit', '1search'],
    ['is too long', 'a'.repeat(65)],
    ['has a dot', 'notes.search'],
    ['is empty', ''],
  ])('refuses a tool id a model would not accept: one that %s', async (_why, id) => {
    const message = await refusal(capabilityClass(def({ tools: [tool({ id })] })));
    expect(message).toContain('id must match ^[a-zA-Z][a-zA-Z0-9_-]{0,63}$');
    expect(message).toContain('capability "fixture-probe" (FixtureCapability)');
  });

  it.each([
    ['an empty capability description', def({ description: '' }), 'description must be a non-empty string'],
    ['a blank capability description', def({ description: '   ' }), 'description must be a non-empty string'],
    ['an empty name', def({ name: '' }), 'name must be a non-empty string'],
    ['a missing category', def({ category: undefined }), 'category must be a non-empty string'],
    ['an empty tool description', def({ tools: [tool({ description: ' ' })] }), 'tool "fixture_probe_tool": description must be a non-empty string'],
    ['a bad capability id', def({ id: 'Fixture Probe' }), 'id must match ^[a-z][a-z0-9_-]{0,63}$'],
    ['a missing tools list', def({ tools: undefined }), 'tools must be an array ([] for a capability without tools)'],
    ['a tool without risk', def({ tools: [tool({ risk: undefined })] }), 'tool "fixture_probe_tool": risk must be one of read_only, mutating, destructive'],
    ['an unknown risk', def({ tools: [tool({ risk: 'harmless' })] }), 'risk must be one of'],
    ['a tool without an input class', def({ tools: [tool({ input: { text: 'string' } })] }), 'input must be a class-validator class'],
    ['a non-boolean interruptBefore', def({ tools: [tool({ interruptBefore: 'yes' })] }), 'interruptBefore must be a boolean'],
    ['a non-boolean offloadLargeResults', def({ tools: [tool({ offloadLargeResults: 1 })] }), 'offloadLargeResults must be a boolean'],
    ['a negative maxOutputTokens', def({ tools: [tool({ maxOutputTokens: -1 })] }), 'maxOutputTokens must be an integer >= 0'],
    ['a fractional maxOutputTokens', def({ tools: [tool({ maxOutputTokens: 1.5 })] }), 'maxOutputTokens must be an integer >= 0'],
    ['a null tool', def({ tools: [null] }), 'tools[0]: id must match'],
    ['a non-string promptGuidance', def({ promptGuidance: 42 }), 'promptGuidance must be a string'],
    ['a config schema that is not a class', def({ configSchema: { timezone: 'UTC' } }), 'configSchema must be a class'],
    ['tags that are not a list', def({ tags: 'time' }), 'tags must be an array of non-empty strings'],
    ['an empty profile', def({ profiles: [''] }), 'profiles must be an array of non-empty strings'],
    ['a scope no organization could be granted', def({ scopes: ['Notes Write'] }), 'scopes must be an array of scopes matching'],
  ])('refuses %s', async (_what, definition, expected) => {
    const message = await refusal(capabilityClass(definition));
    expect(message).toContain(expected);
  });

  it('refuses a declaration made with no arguments, naming the class', async () => {
    const message = await refusal(capabilityClass(undefined as unknown as Record<string, unknown>, { className: 'Forgetful' }));
    expect(message).toContain('capability "undefined" (Forgetful): id must match');
  });

  it('lists every problem at once', async () => {
    const message = await refusal(
      capabilityClass(def({ id: 'fixture-x', description: '' }), { className: 'X' }),
      capabilityClass(def({ id: 'fixture-y', name: '' }), { className: 'Y' }),
    );
    expect(message).toMatch(/^The capability registry refused to start \(2 problems\):/);
    expect(message).toContain('capability "fixture-x" (X): description');
    expect(message).toContain('capability "fixture-y" (Y): name');
    const single = await refusal(capabilityClass(def({ name: '' })));
    expect(single).toMatch(/\(1 problem\):\n {2}- capability "fixture-probe"/);
  });

  describe('config and input classes', () => {
    class OptionalWithoutDefault {
      @IsOptional()
      @IsString()
      units?: string;
    }
    class Inner {
      @IsOptional()
      @IsInt()
      depth?: number;
    }
    class NestedWithoutDefault {
      @IsOptional()
      @ValidateNested()
      @TransformType(() => Inner)
      inner: Inner = new Inner();
    }
    class Undecorated {
      @IsOptional()
      @IsString()
      units: string = 'metric';
      secret = 'x';
    }
    class BadLabels {
      @IsOptional()
      @IsIn(['a', 'b'])
      @EnumLabels({ a: 'A', c: 'C' })
      mode: string = 'a';
    }

    it.each([
      ['an optional field without a default', OptionalWithoutDefault, 'config OptionalWithoutDefault: field "units": optional field has no default'],
      ['a nested optional field without a default', NestedWithoutDefault, 'config NestedWithoutDefault: field "inner.depth": optional field has no default'],
      ['a field without a validation decorator', Undecorated, 'config Undecorated: field "secret": field has no validation decorator'],
      ['enum labels that do not match the values', BadLabels, 'config BadLabels: field "mode": @EnumLabels keys [a, c] must equal the @IsIn values [a, b]'],
    ])('refuses a config class with %s', async (_what, configSchema, expected) => {
      expect(await refusal(capabilityClass(def({ configSchema })))).toContain(`capability "fixture-probe" (FixtureCapability): ${expected}`);
    });

    it('allows optional tool input fields without defaults, and refuses a broken input class naming the tool', async () => {
      const { registry, moduleRef } = await bootRegistry([moduleOf(capabilityClass(def({ tools: [tool({ input: OptionalWithoutDefault })] })))]);
      expect(registry.get('fixture-probe')?.tools[0].inputSchema).toMatchObject({ properties: { units: { type: 'string' } } });
      await moduleRef.close();
      const message = await refusal(capabilityClass(def({ tools: [tool({ input: Undecorated })] })));
      expect(message).toContain('tool "fixture_probe_tool" input Undecorated: field "secret"');
    });
  });

  describe('providers', () => {
    it('refuses a request-scoped provider', async () => {
      const message = await refusal(capabilityClass(baseDefinition(), { className: 'PerRequest', scope: Scope.REQUEST }));
      expect(message).toContain('PerRequest: a capability provider must be a static singleton');
    });

    it('refuses a transient provider', async () => {
      const message = await refusal(capabilityClass(baseDefinition(), { className: 'Fleeting', scope: Scope.TRANSIENT }));
      expect(message).toContain('Fleeting: a capability provider must be a static singleton');
    });

    it('refuses a provider that depends on the request', async () => {
      @Capability(baseDefinition())
      @Injectable()
      class NeedsRequest {
        constructor(@Inject(REQUEST) readonly request: unknown) {}
        build() {
          return null;
        }
      }
      expect(await refusal(NeedsRequest)).toContain('NeedsRequest: a capability provider must be a static singleton');
    });

    it('refuses a provider without build()', async () => {
      expect(await refusal(capabilityClass(baseDefinition(), { className: 'NoBuild', noBuild: true }))).toContain(
        'NoBuild: a capability provider must have a build(ctx) method',
      );
    });

    it('counts an aliased provider once, and sees only class providers (a factory-made instance is not indexed by Nest)', async () => {
      const Probe = capabilityClass(baseDefinition(), { className: 'Probe' });
      const Made = capabilityClass(baseDefinition('fixture-made'), { className: 'Made' });
      const { registry, moduleRef } = await bootRegistry([
        moduleOf(Probe, { provide: 'PROBE_ALIAS', useExisting: Probe }, { provide: 'MADE', useFactory: () => new Made() }),
      ]);
      expect(registry.all().map((c) => c.definition.id)).toEqual(['fixture-probe']);
      await moduleRef.close();
    });
  });
});

describe('TextInput fixture', () => {
  it('is a plain input class', () => {
    expect(new TextInput()).toBeInstanceOf(TextInput);
  });
});
