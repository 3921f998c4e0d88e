import { ModuleMetadata } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { Test, TestingModule } from '@nestjs/testing';
import { CapabilityMetadataAccessor } from '../../src/capabilities/capability-metadata.accessor';
import { CapabilityRegistry } from '../../src/capabilities/capability-registry.service';
import { CapabilityExplorer } from '../../src/capabilities/capability.explorer';

/**
 * The registry alone over the given modules, without the builtin set or a database: unit tests
 * register exactly the capabilities they are about. `init()` runs the boot checks, so a bad set
 * rejects here just as it stops the application.
 */
export async function bootRegistry(imports: ModuleMetadata['imports'] = []): Promise<{ registry: CapabilityRegistry; moduleRef: TestingModule }> {
  const moduleRef = await Test.createTestingModule({
    imports: [DiscoveryModule, ...(imports ?? [])],
    providers: [CapabilityMetadataAccessor, CapabilityExplorer, CapabilityRegistry],
  }).compile();
  try {
    await moduleRef.init();
  } catch (err) {
    await moduleRef.close();
    throw err;
  }
  return { registry: moduleRef.get(CapabilityRegistry), moduleRef };
}
