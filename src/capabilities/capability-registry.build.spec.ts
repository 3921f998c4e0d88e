import { TestingModule } from '@nestjs/testing';
import { buildContext } from '../../test/fixtures/build-context';
import { baseDefinition, capabilityClass, moduleOf, TextInput } from '../../test/fixtures/capability-factory';
import { bootRegistry } from '../../test/support/capability-registry';
import { CapabilityRegistry } from './capability-registry.service';
import { CapabilityDriftError } from './capability.errors';
import type { CapabilityContribution } from './capability.types';

describe('CapabilityRegistry.build', () => {
  let moduleRef: TestingModule;
  let registry: CapabilityRegistry;
  /** What the drifting fixture builds next. */
  let next: CapabilityContribution | null;
  const run = () => ({ ok: true });

  beforeAll(async () => {
    const definition = {
      ...baseDefinition('fixture-drift'),
      tools: [
        { id: 'drift_read', description: 'Reads.', risk: 'read_only' as const, input: TextInput },
        { id: 'drift_write', description: 'Writes.', risk: 'mutating' as const, input: TextInput },
      ],
    };
    const Drifting = capabilityClass(definition, { className: 'Drifting', build: async () => next });
    const Quiet = capabilityClass({ ...baseDefinition('fixture-quiet'), tools: [] }, { className: 'Quiet', build: () => ({ prompt: 'Be quiet.' }) });
    ({ registry, moduleRef } = await bootRegistry([moduleOf(Drifting, Quiet)]));
  });
  afterAll(() => moduleRef.close());

  it('passes the context through and stamps the contribution', async () => {
    next = {
      tools: [
        { id: 'drift_write', execute: run },
        { id: 'drift_read', execute: run },
      ],
      prompt: 'Hi',
      settings: { a: 1 },
      limits: { maxToolCallsPerRun: 3 },
    };
    expect(await registry.build('fixture-drift', buildContext())).toEqual({ ...next, capabilityId: 'fixture-drift' });
  });

  it('lets a capability contribute nothing', async () => {
    next = null;
    expect(await registry.build('fixture-drift', buildContext())).toBeNull();
  });

  it('gives a tool-less contribution an empty tools list', async () => {
    expect(await registry.build('fixture-quiet', buildContext())).toEqual({ capabilityId: 'fixture-quiet', tools: [], prompt: 'Be quiet.' });
  });

  it.each<[string, () => CapabilityContribution, RegExp]>([
    [
      'an undeclared tool',
      () => ({
        tools: [
          { id: 'drift_read', execute: run },
          { id: 'drift_write', execute: run },
          { id: 'drift_sneak', execute: run },
        ],
      }),
      /undeclared tools \[drift_sneak\]$/,
    ],
    ['a missing tool', () => ({ tools: [{ id: 'drift_read', execute: run }] }), /missing declared tools \[drift_write\]$/],
    ['no tools at all', () => ({ prompt: 'x' }), /missing declared tools \[drift_read, drift_write\]$/],
    [
      'a renamed tool',
      () => ({
        tools: [
          { id: 'drift_read', execute: run },
          { id: 'drift_writer', execute: run },
        ],
      }),
      /undeclared tools \[drift_writer\]; missing declared tools \[drift_write\]$/,
    ],
    [
      'a tool built twice',
      () => ({
        tools: [
          { id: 'drift_read', execute: run },
          { id: 'drift_write', execute: run },
          { id: 'drift_read', execute: run },
        ],
      }),
      /malformed tools \[drift_read\]$/,
    ],
    ['a tool without execute', () => ({ tools: [{ id: 'drift_read', execute: run }, { id: 'drift_write' } as never] }), /malformed tools \[drift_write\]$/],
    [
      'a null tool',
      () => ({ tools: [{ id: 'drift_read', execute: run }, { id: 'drift_write', execute: run }, null as never] }),
      /undeclared tools \[undefined\]$/,
    ],
  ])('refuses %s, naming the capability and the tools', async (_what, make, expected) => {
    next = make();
    const built = registry.build('fixture-drift', buildContext());
    await expect(built).rejects.toBeInstanceOf(CapabilityDriftError);
    await expect(built).rejects.toThrow(/^Capability "fixture-drift" built tools that differ from its declaration: /);
    await expect(built).rejects.toThrow(expected);
  });

  it('exposes what drifted on the error', async () => {
    next = {
      tools: [
        { id: 'drift_read', execute: run },
        { id: 'drift_other', execute: run },
      ],
    };
    const error = (await registry.build('fixture-drift', buildContext()).catch((e: unknown) => e)) as CapabilityDriftError;
    expect(error).toMatchObject({
      name: 'CapabilityDriftError',
      capabilityId: 'fixture-drift',
      undeclared: ['drift_other'],
      missing: ['drift_write'],
      malformed: [],
    });
  });

  it('throws for an unknown capability', async () => {
    await expect(registry.build('nope', buildContext())).rejects.toThrow('No capability "nope" is registered');
  });
});
