import type { InstanceWrapper } from '@nestjs/core/injector/instance-wrapper';
import { baseDefinition } from '../../test/fixtures/capability-factory';
import { bootRegistry } from '../../test/support/capability-registry';
import { ClockCapabilityModule } from './builtin/clock/clock.module';
import { ClockCapability } from './builtin/clock/clock.capability';
import { CapabilityMetadataAccessor } from './capability-metadata.accessor';
import { CapabilityExplorer } from './capability.explorer';

/** The explorer on its own, over wrappers made up by the test (the accessor is stubbed). */
describe('CapabilityExplorer', () => {
  const wrapper = (name: string, instance: unknown, { isStatic = true, transient = false } = {}) =>
    ({ name, instance, isTransient: transient, isDependencyTreeStatic: () => isStatic }) as unknown as InstanceWrapper;

  it('keeps static providers with build(), refuses the others by class name', () => {
    const good = { build: () => null };
    const wrappers = [
      wrapper('Good', good),
      wrapper('PerRequest', good, { isStatic: false }),
      wrapper('Fleeting', good, { transient: true }),
      wrapper('NoBuild', {}),
      wrapper('NoInstance', undefined),
    ];
    const accessor = { decoratedProviders: () => wrappers, definitionOf: () => baseDefinition() } as unknown as CapabilityMetadataAccessor;
    const { found, problems } = new CapabilityExplorer(accessor).explore();
    expect(found).toEqual([{ definition: baseDefinition(), provider: good, className: 'Good' }]);
    expect(problems).toEqual([
      'PerRequest: a capability provider must be a static singleton (it is request-scoped or transient, or depends on such a provider)',
      'Fleeting: a capability provider must be a static singleton (it is request-scoped or transient, or depends on such a provider)',
      'NoBuild: a capability provider must have a build(ctx) method',
      'NoInstance: a capability provider must have a build(ctx) method',
    ]);
  });
});

describe('CapabilityMetadataAccessor', () => {
  it('finds the decorated providers through Nest and reads their declaration', async () => {
    const { moduleRef } = await bootRegistry([ClockCapabilityModule]);
    const accessor = moduleRef.get(CapabilityMetadataAccessor);
    const wrappers = accessor.decoratedProviders();
    expect(wrappers.map((w) => w.metatype)).toEqual([ClockCapability]);
    expect(accessor.definitionOf(wrappers[0])).toMatchObject({ id: 'clock', tools: [] });
    await moduleRef.close();
  });
});
